#!/usr/bin/env bash
# The servers the benchmark knows, in the order they run: how each starts, which load
# generator flags it needs, and which scenarios apply to it.
#
# Sourced by run.sh; run directly as `servers.sh exec NAME PORT` it replaces itself with the
# server (so the PID the runner holds is the server's), listening on 127.0.0.1:PORT.
#
# VELLUM_BIN (default: <repo>/target/<profile>/vellum) and BENCH_PROFILE (release | debug)
# select the binaries. vellum-redis needs BENCH_REDIS_URL: run.sh starts a redis-server for it;
# vellum-redis-cluster needs BENCH_REDIS_CLUSTER_URL: run.sh starts a three-master cluster.
# vellum-auth* need BENCH_AUTH_JWKS_URL, BENCH_AUTH_ISSUER and BENCH_AUTH_TOKEN: run.sh mints a
# key and a token (auth/mint.py) and serves the JWKS on loopback.
# BENCH_TOOLS=N starts the server with N extra tools to list (the `tools` scenario).
# BENCH_SCENARIO=wait starts vellum, rmcp and go with their `hello_wait` tool, which waits on
# the Redis at BENCH_WAIT_REDIS_URL and the HTTP stub at BENCH_WAIT_HTTP_URL (run.sh starts
# both for the `wait` scenario).
# vellum-default is the bench server as a library user builds it: the vellum-demos example
# `bench` (VELLUM_DEFAULT_BIN), the library's default features (HTTP/1.1 only), default options.
# A name prefixed `base:` (run.sh --compare) is the same server run from VELLUM_BASE_BIN, the
# build of another revision.

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_DIR=$(dirname "$BENCH_DIR")
RMCP_BIN=$BENCH_DIR/peers/rmcp/target/release/rmcp-peer
GO_BIN=${PEERS_DIR:-$BENCH_DIR/peers/go/.build}/go/bench-go
VELLUM_BIN_GIVEN=${VELLUM_BIN:-}
VELLUM_DEFAULT_BIN_GIVEN=${VELLUM_DEFAULT_BIN:-}

# set_profile release|debug: the binaries of that Cargo profile.
set_profile() {
    BENCH_PROFILE=$1
    VELLUM_BIN=${VELLUM_BIN_GIVEN:-$REPO_DIR/target/$1/vellum}
    VELLUM_DEFAULT_BIN=${VELLUM_DEFAULT_BIN_GIVEN:-$REPO_DIR/target/$1/examples/bench}
    NULL_BIN=$BENCH_DIR/target/$1/nullserver
    MCPBENCH=$BENCH_DIR/target/$1/mcpbench
}
set_profile "${BENCH_PROFILE:-release}"

ALL_SERVERS="null null-sse rmcp rmcp-stateless-json rmcp@2026 ts py go go-json go-stateless go@2026 vellum vellum-json vellum-stateless vellum-store vellum-redis vellum-redis-cluster vellum@2026 vellum-h2 vellum-default vellum-metrics vellum-auth vellum-auth-dpop-allowed vellum-stdio vellum-proxy vellum-proxy@2026 supergateway"
SUPERGATEWAY_JS=$BENCH_DIR/peers/supergateway/node_modules/supergateway/dist/index.js

# The audience of the benchmark's access tokens (fixed: every run has a port of its own).
BENCH_AUTH_AUDIENCE=https://bench.invalid/mcp
# The Python that mints tokens: one with the `cryptography` package (the Python SDK's test venv
# has it, as a dependency of the SDK).
BENCH_PYTHON=${BENCH_PYTHON:-python3}

# auth_start DIR LOG CPU: for the vellum-auth* rows, mints a fresh P-256 key and one access
# token without cnf (auth/mint.py) into DIR, serves DIR's JWKS on 127.0.0.1:19980 (python3
# -m http.server pinned to CPU; the server fetches it at start), exports BENCH_AUTH_* and
# sets jwks_pid (out of the job table: the caller kills it on exit).
auth_start() {
    local dir=$1 log=$2 cpu=$3 jwks_port=19980
    "$MCPBENCH" wait-port --free --addr "127.0.0.1:$jwks_port" || { echo "port $jwks_port busy" >&2; return 1; }
    export BENCH_AUTH_ISSUER=http://127.0.0.1:$jwks_port
    BENCH_AUTH_TOKEN=$("$BENCH_PYTHON" "$BENCH_DIR/auth/mint.py" "$dir" "$BENCH_AUTH_ISSUER" "$BENCH_AUTH_AUDIENCE") || return 1
    export BENCH_AUTH_TOKEN BENCH_AUTH_JWKS_URL=$BENCH_AUTH_ISSUER/jwks.json
    taskset -c "$cpu" python3 -m http.server --bind 127.0.0.1 --directory "$dir" "$jwks_port" >"$log" 2>&1 &
    jwks_pid=$!
    disown "$jwks_pid"
    "$MCPBENCH" wait-port --addr "127.0.0.1:$jwks_port" --pid "$jwks_pid" --timeout 30 ||
        { echo "the JWKS server did not start, see $log" >&2; return 1; }
}

# server_exec NAME PORT: exec the server.
server_exec() {
    if [[ $1 == base:* ]]; then
        VELLUM_BIN=${VELLUM_BASE_BIN:?base servers need VELLUM_BASE_BIN} server_exec "${1#base:}" "$2"
        return
    fi
    local addr=127.0.0.1:$2 tools=${BENCH_TOOLS:-0}
    local vellum=("$VELLUM_BIN" serve --addr "$addr" --server bench --bench-tools "$tools")
    # The `wait` scenario: the tool that waits on Redis and the HTTP stub (same flags on the
    # peers, prefixed --bench- on vellum serve).
    local wait=()
    if [[ ${BENCH_SCENARIO:-} == wait ]]; then
        wait=(--wait-redis "${BENCH_WAIT_REDIS_URL:?}" --wait-http "${BENCH_WAIT_HTTP_URL:?}")
        vellum+=(--bench-wait-redis "$BENCH_WAIT_REDIS_URL" --bench-wait-http "$BENCH_WAIT_HTTP_URL")
    fi
    case $1 in
        null) exec "$NULL_BIN" --addr "$addr" ;;
        null-sse) exec "$NULL_BIN" --addr "$addr" --sse ;;
        rmcp | rmcp@2026) exec "$RMCP_BIN" --addr "$addr" --tools "$tools" "${wait[@]}" ;;
        rmcp-stateless-json) exec "$RMCP_BIN" --addr "$addr" --stateless --tools "$tools" ;;
        ts) exec node "$BENCH_DIR/peers/ts/server.mjs" --addr "$addr" --tools "$tools" ;;
        py) exec "$BENCH_DIR/peers/py/.venv/bin/python" "$BENCH_DIR/peers/py/server.py" --addr "$addr" --tools "$tools" ;;
        go) exec "$GO_BIN" --addr "$addr" --mode stateful --tools "$tools" "${wait[@]}" ;;
        go-json) exec "$GO_BIN" --addr "$addr" --mode json --tools "$tools" ;;
        # The Go SDK serves 2026-07-28 only from its stateless handler.
        go-stateless | go@2026) exec "$GO_BIN" --addr "$addr" --mode stateless --tools "$tools" ;;
        # vellum-h2 is the same server spoken to in h2c (the load generator's --http2).
        vellum | vellum@2026 | vellum-h2) exec "${vellum[@]}" ;;
        vellum-default) exec "$VELLUM_DEFAULT_BIN" --addr "$addr" --bench-tools "$tools" ;;
        # Port 0: the recorder is installed and /metrics served on a port of its own.
        vellum-metrics) exec "${vellum[@]}" --metrics-addr 127.0.0.1:0 ;;
        # An ES256 JWT resource server (keys from a JWKS on loopback); `off` refuses DPoP, so
        # the pair vellum-auth / vellum-auth-dpop-allowed shows what `allowed` (the default)
        # costs a plain Bearer token.
        vellum-auth | vellum-auth-dpop-allowed)
            local dpop=off
            [[ $1 == vellum-auth-dpop-allowed ]] && dpop=allowed
            exec "${vellum[@]}" --auth-jwks "${BENCH_AUTH_JWKS_URL:?}" --auth-issuer "${BENCH_AUTH_ISSUER:?}" \
                --auth-audience "$BENCH_AUTH_AUDIENCE" --auth-dpop "$dpop" ;;
        vellum-json) exec "${vellum[@]}" --json-response ;;
        # The gateways: the bench server over stdio behind each, a child per session (the
        # 2026-07-28 row: requests share one child). `vellum` is the same server called
        # directly over HTTP.
        # The child of the gateway rows, called directly over its stdin and stdout (the
        # `stdio` scenario spawns it; the port is not used).
        vellum-stdio) exec "$VELLUM_BIN" serve --stdio --server bench --bench-tools "$tools" ;;
        vellum-proxy | vellum-proxy@2026)
            exec "$VELLUM_BIN" proxy --addr "$addr" --max-children 100000 \
                --stdio "$VELLUM_BIN serve --stdio --server bench --bench-tools $tools" ;;
        supergateway)
            exec node "$SUPERGATEWAY_JS" --stdio "$VELLUM_BIN serve --stdio --server bench --bench-tools $tools" \
                --outputTransport streamableHttp --stateful --port "$2" --logLevel none ;;
        vellum-stateless) exec "${vellum[@]}" --stateless ;;
        vellum-store) exec "${vellum[@]}" --event-store memory ;;
        vellum-redis)
            exec "${vellum[@]}" --event-store "${BENCH_REDIS_URL:?}" --session-store "$BENCH_REDIS_URL" ;;
        vellum-redis-cluster)
            exec "${vellum[@]}" --event-store "${BENCH_REDIS_CLUSTER_URL:?}" \
                --session-store "$BENCH_REDIS_CLUSTER_URL" ;;
        *) echo "servers.sh: unknown server '$1'" >&2; exit 2 ;;
    esac
}

# server_flags NAME: extra mcpbench flags (2026-07-28 servers are spoken to in that version).
server_flags() {
    [[ $1 == base:* ]] && { server_flags "${1#base:}"; return; }
    case $1 in
        *stateless*) echo "--stateless" ;;
        *@2026) echo "--protocol-version 2026-07-28" ;;
        *-h2) echo "--http2" ;;
        vellum-auth*) echo "--bearer ${BENCH_AUTH_TOKEN:?}" ;;
        *) echo "" ;;
    esac
}

# The scenarios, in the order each repetition runs them (every server of a scenario one after
# another, so that servers compared with each other are measured close together in time).
ALL_SCENARIOS="latency throughput sessions wait stream conc size tools hold streams fanout setup cold chunks stdio"

# server_scenarios NAME: the scenarios that apply (no sessions to hold without sessions; the
# null servers have only hello_world; the curves and the wire framing are measured on each
# SDK's default server, the store and framing variants on the request/response scenarios and
# the streaming one).
server_scenarios() {
    [[ $1 == base:* ]] && { server_scenarios "${1#base:}"; return; }
    case $1 in
        null | null-sse) echo "latency throughput sessions conc hold streams setup cold" ;;
        rmcp-stateless-json | go-stateless | vellum-stateless) echo "latency throughput setup cold" ;;
        vellum@2026) echo "latency throughput stream conc fanout setup cold chunks" ;;
        # A gateway holds a child process per session: held sessions in the hundreds (see
        # run.sh), no fan-out of the server's own.
        vellum-proxy | supergateway) echo "latency throughput sessions stream hold setup" ;;
        vellum-stdio) echo "stdio" ;;
        vellum-proxy@2026) echo "latency throughput" ;;
        *@2026) echo "latency throughput stream fanout setup cold" ;;
        vellum-json | vellum-store | vellum-redis | vellum-redis-cluster)
            echo "latency throughput sessions stream hold streams setup cold" ;;
        # h2c: everything but the raw HTTP/1.1 framing (chunks), the many-tools starts and
        # setup (its new connection per session is, under h2, a new stream on a shared one).
        vellum-h2) echo "latency throughput sessions stream conc size hold streams fanout cold" ;;
        # The library's default build: request/response, and what its HTTP/1.1-only accept
        # loop holds per session and GET stream.
        vellum-default) echo "latency throughput sessions stream hold streams setup cold" ;;
        # What a recorder or a token check costs per request, per event and per new session.
        vellum-metrics | vellum-auth | vellum-auth-dpop-allowed) echo "latency throughput sessions stream setup" ;;
        # The Go SDK's JSON mode answers a call with one JSON body and drops the call's
        # progress notifications: no streaming there.
        go-json) echo "latency throughput sessions hold streams setup cold" ;;
        # Tools that wait (issue 29): Vellum, rmcp and the Go SDK.
        vellum | rmcp | go) echo "latency throughput sessions wait stream conc size tools hold streams fanout setup cold chunks" ;;
        *) echo "latency throughput sessions stream conc size tools hold streams fanout setup cold chunks" ;;
    esac
}

# server_peer NAME: which part of peers/build.sh the server needs (empty: none).
server_peer() {
    [[ $1 == base:* ]] && { server_peer "${1#base:}"; return; }
    case $1 in
        rmcp*) echo rmcp ;;
        ts*) echo ts ;;
        py*) echo py ;;
        go*) echo go ;;
        supergateway) echo supergateway ;;
        *) echo "" ;;
    esac
}

# server_missing NAME: why the server cannot run here (empty: it can).
server_missing() {
    if [[ $1 == base:* ]]; then
        [[ -n ${VELLUM_BASE_BIN:-} ]] || { echo "no VELLUM_BASE_BIN (run.sh --compare sets it)"; return; }
        # --compare builds the other revision's vellum only, not its vellum-demos example.
        [[ $1 == base:vellum-default ]] && { echo "no base build of vellum-default (--compare builds vellum only)"; return; }
        VELLUM_BIN=$VELLUM_BASE_BIN server_missing "${1#base:}"
        return
    fi
    case $1 in
        vellum-default) [[ -x $VELLUM_DEFAULT_BIN ]] || echo "no $VELLUM_DEFAULT_BIN (cargo build -p vellum-demos --example bench)" ;;
        vellum*)
            [[ -x $VELLUM_BIN ]] || { echo "no $VELLUM_BIN"; return; }
            local help
            help=$("$VELLUM_BIN" serve --help 2>&1) || { echo "'vellum serve --help' fails"; return; }
            [[ $help == *--bench-tools* ]] || { echo "vellum serve has no --server bench"; return; }
            case $1 in
                vellum-json) [[ $help == *--json-response* ]] || echo "vellum serve has no --json-response" ;;
                vellum-stateless) [[ $help == *--stateless* ]] || echo "vellum serve has no --stateless" ;;
                vellum-store) [[ $help == *--event-store* ]] || echo "vellum serve has no --event-store" ;;
                vellum-redis)
                    [[ $help == *--session-store* ]] || { echo "vellum serve has no --session-store"; return; }
                    command -v redis-server >/dev/null || echo "no redis-server"
                    ;;
                vellum-redis-cluster)
                    [[ $help == *redis-cluster://* ]] || { echo "vellum serve takes no redis-cluster:// URL"; return; }
                    command -v redis-server >/dev/null || echo "no redis-server"
                    ;;
                vellum-metrics) [[ $help == *--metrics-addr* ]] || echo "vellum serve has no --metrics-addr" ;;
                vellum-proxy*) "$VELLUM_BIN" proxy --help >/dev/null 2>&1 || echo "vellum has no proxy command" ;;
                vellum-auth*)
                    [[ $help == *--auth-dpop* ]] || { echo "vellum serve has no --auth-dpop"; return; }
                    "$BENCH_PYTHON" -c "import cryptography" 2>/dev/null || echo "no cryptography in $BENCH_PYTHON (to mint the token)"
                    ;;
            esac
            ;;
        null*) [[ -x $NULL_BIN ]] || echo "no $NULL_BIN" ;;
        rmcp*) [[ -x $RMCP_BIN ]] || echo "no $RMCP_BIN" ;;
        ts) [[ -d $BENCH_DIR/peers/ts/node_modules ]] || echo "no peers/ts/node_modules" ;;
        supergateway)
            [[ -f $SUPERGATEWAY_JS ]] || { echo "no peers/supergateway/node_modules"; return; }
            [[ -x $VELLUM_BIN ]] || echo "no $VELLUM_BIN (the child)" ;;
        py) [[ -x $BENCH_DIR/peers/py/.venv/bin/python ]] || echo "no peers/py/.venv" ;;
        go*) [[ -x $GO_BIN ]] || echo "no Go peer binary $GO_BIN (bench/peers/build.sh go builds it from a snapshot of the Go SDK's repository; see shared/tools/go-peer/README.md)" ;;
        *) echo "unknown server" ;;
    esac
}

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
    case ${1:-} in
        exec) server_exec "$2" "$3" ;;
        *) echo "usage: servers.sh exec NAME PORT   (servers: $ALL_SERVERS)" >&2; exit 2 ;;
    esac
fi
