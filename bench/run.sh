#!/usr/bin/env bash
# One command for the whole benchmark: builds Vellum, the peers and the harness, runs every
# server x scenario on a fresh server (server pinned to CPU 0, load generator to CPU 1),
# interleaved (repetition 1 of every scenario and server, then repetition 2 of all of them,
# ...; within a repetition each scenario on every server one after another), then writes
# docs/benchmarks.md and the charts in docs/bench/ at the repository root.
#
# usage: bench/run.sh [--quick | --smoke] [--only a,b,...] [--scenarios a,b,...] [--reps N]
#                     [--debug] [--nice N | --rt] [--no-build] [--no-report] [--out DIR]
#                     [--compare REV]
#   --quick      one repetition of everything with short windows (0.3 s warm-up, 1.5 s
#                measured), held sessions up to 10,000, fan-out to 1,000 streams
#   --smoke      seconds-long check (tiny windows and counts, 1 rep, no report); see smoke.sh
#   --only LIST  only these servers (see servers.sh; default: all that can run here)
#   --scenarios LIST  only these scenarios (default: all; see ALL_SCENARIOS in servers.sh)
#   --reps N     repetitions (default 3; --quick and --smoke: 1)
#   --debug      use debug builds (for the smoke; never for figures)
#   --nice N     run servers and load generator at this nice value (default 0; a negative
#                value shields the figures from other work on a shared machine, at its cost)
#   --rt         run servers and load generator under SCHED_RR (chrt -r 10): on a machine
#                busy with other work, the only way to keep it off the measured cores (the
#                kernel still leaves other work 5% of each second)
#   --out DIR    where results.jsonl, versions.txt and server logs go
#                (default bench/results/<date-time>)
#   --compare REV  before/after: also builds the git revision REV (bench/compare/, a target
#                dir of its own) and runs each Vellum server twice per repetition, REV's build
#                (labelled base:NAME) right before the working tree's; prints and writes
#                compare.md (medians, ratio, per-repetition ratios) instead of
#                docs/benchmarks.md. Default servers vellum,vellum@2026 and scenarios
#                latency,throughput unless --only / --scenarios say otherwise.
# See bench/README.md for the method.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/servers.sh"

mode=full reps="" only="" scenarios="" build=1 report=1 out="" nice=0 rt=0 compare=""
while (($#)); do
    case $1 in
        --quick) mode=quick ;;
        --smoke) mode=smoke report=0 ;;
        --only) only=${2:?--only needs a list}; shift ;;
        --only=*) only=${1#--only=} ;;
        --scenarios) scenarios=${2:?--scenarios needs a list}; shift ;;
        --scenarios=*) scenarios=${1#--scenarios=} ;;
        --reps) reps=${2:?--reps needs a number}; shift ;;
        --reps=*) reps=${1#--reps=} ;;
        --debug) set_profile debug ;;
        --nice) nice=${2:?--nice needs a number}; shift ;;
        --nice=*) nice=${1#--nice=} ;;
        --rt) rt=1 ;;
        --no-build) build=0 ;;
        --no-report) report=0 ;;
        --out) out=${2:?--out needs a folder}; shift ;;
        --out=*) out=${1#--out=} ;;
        --compare) compare=${2:?--compare needs a revision}; shift ;;
        --compare=*) compare=${1#--compare=} ;;
        -h | --help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "run.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
    shift
done

# Per mode: load windows; hold steps (cumulative held sessions), the step budget and the new
# sessions timed at each step; held sessions with GET streams; fan-out steps and rounds;
# setups; tools listed; stream calls read from the wire.
case $mode in
    full)
        reps=${reps:-3}
        load=(--warmup 1 --duration 5)
        hold=(--points 1000,10000,100000 --settle 2 --step-budget 180 --fresh 20)
        streams=(--hold 10000 --settle 2 --fresh 0)
        fanout=(--points 1000,10000 --rounds 5)
        setup=(--setup-count 200) tools_points=(10 1000 10000) chunks=(--chunk-calls 20) ;;
    quick)
        reps=${reps:-1}
        load=(--warmup 0.3 --duration 1.5)
        hold=(--points 1000,10000 --settle 1 --step-budget 10 --fresh 10)
        streams=(--hold 300 --settle 1 --fresh 0)
        fanout=(--points 1000 --rounds 3)
        setup=(--setup-count 50) tools_points=(10 1000 10000) chunks=(--chunk-calls 5) ;;
    smoke)
        reps=${reps:-1}
        load=(--warmup 0.2 --duration 0.5)
        hold=(--points 50,100 --settle 0.2 --step-budget 10 --fresh 3)
        streams=(--hold 100 --settle 0.2 --fresh 0)
        fanout=(--points 50 --rounds 2 --fanout-timeout 10)
        setup=(--setup-count 10) tools_points=(10 100) chunks=(--chunk-calls 2) ;;
esac
# Held sessions of the gateways (a child process each), per mode.
case $mode in
    full) gateway_hold=(--points 100,200 --settle 2 --step-budget 120 --fresh 10) ;;
    quick) gateway_hold=(--points 50,150 --settle 1 --step-budget 60 --fresh 5) ;;
    smoke) gateway_hold=(--points 5,10 --settle 0.2 --step-budget 10 --fresh 2) ;;
esac
conc=()
size=()
if [[ $mode == smoke ]]; then
    conc=(--points 1,16)
    size=(--points 100,10240)
fi
trace=()
command -v strace >/dev/null && trace=(--trace)
# File descriptors for the server and the load generator: 10,000 held sessions with a GET
# stream each need one socket per stream on both sides. 65,536, or the hard limit if lower
# (raising the hard limit needs CAP_SYS_RESOURCE).
# Scheduling of the measured processes (the server and mcpbench).
prio=(nice -n "$nice")
((rt)) && prio=(chrt -r 10)
NOFILE=65536
hard=$(ulimit -Hn)
[[ $hard != unlimited ]] && ((hard < NOFILE)) && NOFILE=$hard
cargo_flags=()
[[ $BENCH_PROFILE == release ]] && cargo_flags=(--release)

if [[ -n $compare ]]; then
    compare_sha=$(git -C "$REPO_DIR" rev-parse --verify --quiet "$compare^{commit}") ||
        { echo "run.sh: --compare: no revision '$compare'" >&2; exit 2; }
    [[ -n $only ]] || only=vellum,vellum@2026
    [[ -n $scenarios ]] || scenarios=latency,throughput
fi

servers=()
if [[ -n $only ]]; then
    IFS=, read -r -a servers <<<"$only"
else
    read -r -a servers <<<"$ALL_SERVERS"
fi
# --compare: each Vellum server's twin built from the base revision runs right before it.
if [[ -n $compare ]]; then
    twinned=()
    for s in "${servers[@]}"; do
        [[ $s == vellum* ]] && twinned+=("base:$s")
        twinned+=("$s")
    done
    servers=("${twinned[@]}")
    # A base binary given in the environment is used as it is (the smoke passes the same build).
    export VELLUM_BASE_BIN=${VELLUM_BASE_BIN:-$BENCH_DIR/compare/$compare_sha/vellum}
fi
scenario_list=()
if [[ -n $scenarios ]]; then
    IFS=, read -r -a scenario_list <<<"$scenarios"
else
    read -r -a scenario_list <<<"$ALL_SCENARIOS"
fi

# --- build -----------------------------------------------------------------------------------
if ((build)); then
    echo "== building the harness ($BENCH_PROFILE)" >&2
    nice -n 15 cargo build "${cargo_flags[@]}" --quiet --manifest-path "$BENCH_DIR/Cargo.toml"
    if [[ " ${servers[*]} " == *" vellum"* ]]; then
        echo "== building vellum ($BENCH_PROFILE)" >&2
        (cd "$REPO_DIR" && nice -n 15 cargo build "${cargo_flags[@]}" --quiet -p vellum-cli) ||
            echo "run.sh: building vellum failed; its servers will be skipped" >&2
    fi
    if [[ " ${servers[*]} " == *" vellum-default "* ]]; then
        # Built on its own, so that the library gets its default features only.
        echo "== building the default build: vellum-demos example bench ($BENCH_PROFILE)" >&2
        (cd "$REPO_DIR" && nice -n 15 cargo build "${cargo_flags[@]}" --quiet -p vellum-demos --example bench) ||
            echo "run.sh: building the vellum-demos example bench failed; vellum-default will be skipped" >&2
    fi
    if [[ -n $compare && ! -x $VELLUM_BASE_BIN ]]; then
        # The revision's tree, exported (no worktree to clean up), built in a target dir
        # shared by every compared revision so that only what changed is rebuilt.
        echo "== building vellum at $compare (${compare_sha:0:12}, $BENCH_PROFILE)" >&2
        src=$BENCH_DIR/compare/$compare_sha/src
        rm -rf "$src" && mkdir -p "$src"
        git -C "$REPO_DIR" archive "$compare_sha" | tar -x -C "$src"
        (cd "$src" && nice -n 15 cargo build "${cargo_flags[@]}" --quiet --locked -p vellum-cli \
            --target-dir "$BENCH_DIR/compare/target") &&
            cp "$BENCH_DIR/compare/target/$BENCH_PROFILE/vellum" "$VELLUM_BASE_BIN" ||
            { echo "run.sh: building $compare failed" >&2; exit 1; }
    fi
    peers=()
    for s in "${servers[@]}"; do
        p=$(server_peer "$s")
        [[ -n $p && " ${peers[*]} " != *" $p "* ]] && peers+=("$p")
    done
    for p in "${peers[@]}"; do
        echo "== building peer: $p" >&2
        # A peer that cannot be built here is skipped below, with the reason in the report.
        "$BENCH_DIR/peers/build.sh" "$p" || echo "run.sh: building peer $p failed" >&2
    done
fi

out=${out:-$BENCH_DIR/results/$(date -u +%Y%m%d-%H%M%S)}
mkdir -p "$out/logs"
results=$out/results.jsonl
: >"$results"
: >"$out/skipped.txt"

runnable=()
for s in "${servers[@]}"; do
    why=$(server_missing "$s")
    if [[ -z $why ]]; then
        runnable+=("$s")
    elif [[ -n $only ]]; then
        echo "run.sh: cannot run $s: $why" >&2
        exit 1
    else
        echo "run.sh: skipping $s: $why" >&2
        echo "$s: $why" >>"$out/skipped.txt"
    fi
done
((${#runnable[@]})) || { echo "run.sh: no server to run" >&2; exit 1; }
ulimit -n "$NOFILE" || echo "run.sh: could not raise the file limit to $NOFILE" >&2

# --- versions ---------------------------------------------------------------------------------
lock_version() { # Cargo.lock crate
    awk -v c="$2" '$0 == "name = \"" c "\"" { getline; gsub(/version = |"/, ""); print; exit }' "$1" 2>/dev/null
}
{
    if [[ " ${runnable[*]} " == *" vellum"* ]]; then
        echo "vellum: $(git -C "$REPO_DIR" describe --always --dirty 2>/dev/null || echo unknown) ($BENCH_PROFILE build)"
        [[ -n $compare ]] && echo "vellum base: $compare = ${compare_sha:0:12} ($BENCH_PROFILE build)"
    fi
    echo "harness: mcpbench $(lock_version "$BENCH_DIR/Cargo.lock" loadgen), hyper $(lock_version "$BENCH_DIR/Cargo.lock" hyper), tokio $(lock_version "$BENCH_DIR/Cargo.lock" tokio)"
    echo "rustc: $(rustc --version 2>/dev/null)"
    echo "rmcp peer: rmcp $(lock_version "$BENCH_DIR/peers/rmcp/Cargo.lock" rmcp), axum $(lock_version "$BENCH_DIR/peers/rmcp/Cargo.lock" axum) (crates.io)"
    ts_pkg=$BENCH_DIR/peers/ts/node_modules
    if [[ -d $ts_pkg ]]; then
        echo "TypeScript peer: @modelcontextprotocol/sdk $(node -p "require('$ts_pkg/@modelcontextprotocol/sdk/package.json').version"), express $(node -p "require('$ts_pkg/express/package.json').version") (npm), node $(node --version)"
    fi
    if [[ -f ${GO_BIN%/*}/BUILD-INFO ]]; then
        echo "Go peer: $(awk '$1 == "sdk" {print "go-sdk", $2, substr($3, 1, 7)} $1 == "go" {v = $4} END {print ""}' "${GO_BIN%/*}/BUILD-INFO" | head -n 1), $(awk '$1 == "go" {print $4}' "${GO_BIN%/*}/BUILD-INFO") (repository snapshot; Debian packages)"
    fi
    py=$BENCH_DIR/peers/py/.venv/bin/python
    if [[ -x $py ]]; then
        echo "Python peer: $("$py" -c 'import importlib.metadata as m; print(", ".join(f"{p} {m.version(p)}" for p in ("mcp", "uvicorn", "starlette")))') (PyPI), $("$py" --version)"
    fi
} >"$out/versions.txt"

# --- runs -------------------------------------------------------------------------------------
port=20000
server_pid="" redis_pid="" wait_redis_pid="" stub_pid=""
trap '[[ -n $server_pid ]] && kill -KILL "$server_pid" 2>/dev/null; [[ -n ${jwks_pid:-} ]] && kill -KILL "$jwks_pid" 2>/dev/null; [[ -n $redis_pid ]] && kill -KILL "$redis_pid" 2>/dev/null; [[ -n $wait_redis_pid ]] && kill -KILL "$wait_redis_pid" 2>/dev/null; [[ -n $stub_pid ]] && kill -KILL "$stub_pid" 2>/dev/null; [[ -n ${cluster_dir:-} ]] && bash "$BENCH_DIR/../scripts/redis-cluster.sh" stop "$cluster_dir"; true' EXIT

# wait: what the tool waits on, started once for the run if a server runs the scenario: a
# redis-server seeded with the greeting, and `mcpbench stub` answering after 1 ms. Both on
# BENCH_WAIT_CPU (default 1, beside the load generator), so the server keeps CPU 0 to itself.
wanted_wait=0
if [[ " ${scenario_list[*]} " == *" wait "* ]]; then
    for s in "${runnable[@]}"; do
        [[ " $(server_scenarios "$s") " == *" wait "* ]] && wanted_wait=1
    done
fi
if ((wanted_wait)) && ! command -v redis-server >/dev/null; then
    [[ -n $only ]] && { echo "run.sh: the wait scenario needs redis-server" >&2; exit 1; }
    echo "run.sh: no redis-server: skipping the wait scenario" >&2
    echo "wait (scenario): no redis-server" >>"$out/skipped.txt"
    wanted_wait=0
fi
if ((wanted_wait)); then
    wait_redis_port=19998 stub_port=19997 wait_cpu=${BENCH_WAIT_CPU:-1}
    for p in "$wait_redis_port" "$stub_port"; do
        "$MCPBENCH" wait-port --free --addr "127.0.0.1:$p" || { echo "run.sh: port $p busy" >&2; exit 1; }
    done
    "${prio[@]}" taskset -c "$wait_cpu" redis-server --bind 127.0.0.1 --port "$wait_redis_port" \
        --save "" --appendonly no >"$out/logs/wait-redis.log" 2>&1 &
    wait_redis_pid=$!
    disown "$wait_redis_pid"
    "${prio[@]}" taskset -c "$wait_cpu" "$MCPBENCH" stub --addr "127.0.0.1:$stub_port" --delay-ms 1 \
        >"$out/logs/stub.log" 2>&1 &
    stub_pid=$!
    disown "$stub_pid"
    "$MCPBENCH" wait-port --addr "127.0.0.1:$wait_redis_port" --pid "$wait_redis_pid" --timeout 30 ||
        { echo "run.sh: redis-server (wait) did not start, see logs/wait-redis.log" >&2; exit 1; }
    "$MCPBENCH" wait-port --addr "127.0.0.1:$stub_port" --pid "$stub_pid" --timeout 30 ||
        { echo "run.sh: mcpbench stub did not start, see logs/stub.log" >&2; exit 1; }
    redis-cli -p "$wait_redis_port" set bench:greeting "Hello World" >/dev/null ||
        { echo "run.sh: seeding the wait scenario's Redis failed" >&2; exit 1; }
    export BENCH_WAIT_REDIS_URL=redis://127.0.0.1:$wait_redis_port BENCH_WAIT_HTTP_URL=http://127.0.0.1:$stub_port/
    echo "wait: redis $(redis-server --version | cut -d' ' -f3) and mcpbench stub (1 ms) on CPU $wait_cpu" >>"$out/versions.txt"
fi

# vellum-redis: one redis-server for the whole run, on the server's core (BENCH_REDIS_CPU,
# default 0) at the same priority, so the server side still has one core in all; emptied
# before each of its runs.
if [[ " ${runnable[*]} " == *" vellum-redis "* ]]; then
    redis_port=19999
    "$MCPBENCH" wait-port --free --addr "127.0.0.1:$redis_port" || { echo "run.sh: port $redis_port busy" >&2; exit 1; }
    "${prio[@]}" taskset -c "${BENCH_REDIS_CPU:-0}" redis-server --bind 127.0.0.1 --port "$redis_port" \
        --save "" --appendonly no >"$out/logs/redis.log" 2>&1 &
    redis_pid=$!
    # Out of the job table: the exit trap's kill then prints no "Killed" line.
    disown "$redis_pid"
    "$MCPBENCH" wait-port --addr "127.0.0.1:$redis_port" --pid "$redis_pid" --timeout 30 ||
        { echo "run.sh: redis-server did not start, see logs/redis.log" >&2; exit 1; }
    export BENCH_REDIS_URL=redis://127.0.0.1:$redis_port
    echo "redis: $(redis-server --version | cut -d' ' -f3) on CPU ${BENCH_REDIS_CPU:-0}" >>"$out/versions.txt"
fi
# vellum-redis-cluster: three masters (scripts/redis-cluster.sh) on the server's core too.
cluster_dir=""
if [[ " ${runnable[*]} " == *" vellum-redis-cluster "* ]]; then
    cluster_ports=(19991 19992 19993)
    for p in "${cluster_ports[@]}"; do
        "$MCPBENCH" wait-port --free --addr "127.0.0.1:$p" || { echo "run.sh: port $p busy" >&2; exit 1; }
    done
    cluster_dir=$out/redis-cluster
    BENCH_REDIS_CLUSTER_URL=$("${prio[@]}" taskset -c "${BENCH_REDIS_CPU:-0}" \
        bash "$BENCH_DIR/../scripts/redis-cluster.sh" start "$cluster_dir" "${cluster_ports[@]}") ||
        { echo "run.sh: the Redis Cluster did not start, see $cluster_dir" >&2; exit 1; }
    export BENCH_REDIS_CLUSTER_URL
    echo "redis cluster: three masters on CPU ${BENCH_REDIS_CPU:-0}" >>"$out/versions.txt"
fi

# vellum-auth*: a fresh P-256 key, its JWKS served on loopback (python3 -m http.server on the
# server's core: the server fetches it once at start) and one ES256 access token without cnf,
# which the load generator sends as Bearer on every request.
jwks_pid=""
if [[ " ${runnable[*]} " == *" vellum-auth"* ]]; then
    auth_start "$out/auth" "$out/logs/jwks.log" "${BENCH_REDIS_CPU:-0}" || exit 1
    echo "auth: ES256 JWT (P-256 key minted by bench/auth/mint.py), JWKS on loopback" >>"$out/versions.txt"
fi

stop_server() {
    kill -TERM "$server_pid" 2>/dev/null || true
    if ! "$MCPBENCH" wait-exit --pid "$server_pid" --timeout 10; then
        kill -KILL "$server_pid" 2>/dev/null || true
    fi
    wait "$server_pid" 2>/dev/null || true
    server_pid=""
}

failed() { # server scenario rep message: a result line that the report shows as an error
    printf '{"server":"%s","scenario":"%s","rep":%s,"errors":1,"error_samples":["%s"]}\n' \
        "$1" "$2" "$3" "$4" >>"$results"
    echo "run.sh: $1 $2 rep $3: $4" >&2
}

run_one() { # server scenario rep [extra mcpbench flags...]; BENCH_TOOLS in the environment
    local s=$1 sc=$2 rep=$3 log
    shift 3
    port=$((port + 1))
    log=$out/logs/$s-$sc${BENCH_TOOLS:+-$BENCH_TOOLS}-$rep.log
    local common=(--label "$s" --rep "$rep" --addr "127.0.0.1:$port" --out "$results" "$@")
    read -r -a flags <<<"$(server_flags "$s")"
    "$MCPBENCH" wait-port --free --addr "127.0.0.1:$port" || { failed "$s" "$sc" "$rep" "port $port busy"; return; }
    echo "== rep $rep  $s  $sc" >&2
    if [[ ${s#base:} == vellum-redis ]]; then
        redis-cli -p "$redis_port" flushall >/dev/null || { failed "$s" "$sc" "$rep" "redis flushall failed"; return; }
    fi
    if [[ ${s#base:} == vellum-redis-cluster ]]; then
        for p in "${cluster_ports[@]}"; do
            redis-cli -p "$p" flushall >/dev/null || { failed "$s" "$sc" "$rep" "redis flushall failed"; return; }
        done
    fi
    if [[ $sc == cold || $sc == stdio ]]; then
        local cmd extra=()
        cmd="taskset -c 0 prlimit --nofile=$NOFILE:$NOFILE $(printf %q "$BENCH_DIR/servers.sh") exec $(printf %q "$s") $port"
        [[ $sc == stdio ]] && extra=("${load[@]}")
        BENCH_PROFILE=$BENCH_PROFILE VELLUM_BIN=$VELLUM_BIN "${prio[@]}" taskset -c 1 "$MCPBENCH" run --scenario "$sc" \
            --spawn "$cmd" "${common[@]}" "${flags[@]}" "${extra[@]}" 2>>"$log" ||
            failed "$s" "$sc" "$rep" "mcpbench failed, see logs/$s-$sc-$rep.log"
        return
    fi
    if [[ $sc == wait ]] && ((!wanted_wait)); then
        return
    fi
    BENCH_PROFILE=$BENCH_PROFILE VELLUM_BIN=$VELLUM_BIN BENCH_TOOLS=${BENCH_TOOLS:-0} BENCH_SCENARIO=$sc "${prio[@]}" \
        taskset -c 0 prlimit --nofile=$NOFILE:$NOFILE "$BENCH_DIR/servers.sh" exec "$s" "$port" >>"$log" 2>&1 &
    server_pid=$!
    if ! "$MCPBENCH" wait-port --addr "127.0.0.1:$port" --pid "$server_pid" --timeout 60 2>>"$log"; then
        if [[ $sc == tools ]]; then
            # A server that cannot start with this many tools within the minute is a finding
            # about that point, not a broken run.
            printf '{"server":"%s","scenario":"tools","rep":%s,"point":%s,"skipped":"did not start within 60 s with %s tools"}\n' \
                "$s" "$rep" "$BENCH_TOOLS" "$BENCH_TOOLS" >>"$results"
        else
            failed "$s" "$sc" "$rep" "server did not start, see logs/${log##*/}"
        fi
        stop_server
        return
    fi
    local extra=()
    case $sc in
        latency | throughput | sessions | wait | stream | tools) extra=("${load[@]}") ;;
        conc) extra=("${load[@]}" "${conc[@]}") ;;
        size) extra=("${load[@]}" "${size[@]}") ;;
        hold)
            extra=("${hold[@]}")
            # A gateway runs a child process per held session: hundreds, not thousands.
            case ${s#base:} in vellum-proxy | supergateway) extra=("${gateway_hold[@]}") ;; esac ;;
        streams) extra=("${streams[@]}") ;;
        fanout) extra=("${fanout[@]}") ;;
        setup) extra=("${setup[@]}") ;;
        chunks) extra=("${chunks[@]}" "${trace[@]}") ;;
    esac
    "${prio[@]}" taskset -c 1 "$MCPBENCH" run --scenario "$sc" --server-pid "$server_pid" "${common[@]}" \
        "${flags[@]}" "${extra[@]}" 2>>"$log" ||
        failed "$s" "$sc" "$rep" "mcpbench failed, see logs/$s-$sc-$rep.log"
    if [[ ${s#base:} == vellum-metrics ]]; then
        # The row means "recorder installed": its /metrics must have counted the calls.
        local murl
        murl=$(sed -n 's/^metrics: //p' "$log" | tail -n 1)
        curl -sf "$murl" | grep -q '^mcp_server_operation_duration_seconds_count' ||
            failed "$s" "$sc" "$rep" "no operation histogram at $murl"
    fi
    stop_server
}

start=$SECONDS
for ((rep = 1; rep <= reps; rep++)); do
    for sc in "${scenario_list[@]}"; do
        for s in "${runnable[@]}"; do
            [[ " $(server_scenarios "$s") " == *" $sc "* ]] || continue
            if [[ $sc == tools ]]; then
                # One server start per point: the tools are registered at start.
                for n in "${tools_points[@]}"; do
                    BENCH_TOOLS=$n run_one "$s" "$sc" "$rep" --points "$n"
                done
            else
                run_one "$s" "$sc" "$rep"
            fi
        done
    done
done
took=$((SECONDS - start))
echo "== $(wc -l <"$results") result lines in $took s; results in $results" >&2
{
    echo "mode: $mode"
    echo "repetitions: $reps"
    echo "duration_s: $took"
} >"$out/meta.txt"

# --- report -----------------------------------------------------------------------------------
if [[ -n $compare ]]; then
    "$MCPBENCH" compare "$results" --base-label "$compare (${compare_sha:0:9})" \
        --new-label "$(git -C "$REPO_DIR" describe --always --dirty 2>/dev/null || echo 'working tree')" \
        --markdown "$out/compare.md"
    echo "== before/after table in $out/compare.md" >&2
elif ((report)); then
    cmd="bench/run.sh"
    [[ $mode != full ]] && cmd+=" --$mode"
    [[ -n $only ]] && cmd+=" --only $only"
    [[ -n $scenarios ]] && cmd+=" --scenarios $scenarios"
    [[ $mode == full && $reps != 3 ]] && cmd+=" --reps $reps"
    [[ $nice != 0 ]] && cmd+=" --nice $nice"
    ((rt)) && cmd+=" --rt"
    "$MCPBENCH" report "$results" --markdown "$REPO_DIR/docs/benchmarks.md" \
        --svg-dir "$REPO_DIR/docs/bench" --versions "$out/versions.txt" --command "$cmd" \
        --skipped "$out/skipped.txt" --meta "$out/meta.txt" --readme "$BENCH_DIR/README.md"
fi
