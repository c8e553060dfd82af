#!/usr/bin/env bash
# The servers the benchmark knows, in the order they run: how each starts, which load
# generator flags it needs, and which scenarios apply to it.
#
# Sourced by run.sh; run directly as `servers.sh exec NAME PORT` it replaces itself with the
# server (so the PID the runner holds is the server's), listening on 127.0.0.1:PORT.
#
# VELLUM_BIN (default: <repo>/target/<profile>/vellum) and BENCH_PROFILE (release | debug)
# select the binaries. vellum-redis needs BENCH_REDIS_URL: run.sh starts a redis-server for it.

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_DIR=$(dirname "$BENCH_DIR")
RMCP_BIN=$BENCH_DIR/peers/rmcp/target/release/rmcp-peer
VELLUM_BIN_GIVEN=${VELLUM_BIN:-}

# set_profile release|debug: the binaries of that Cargo profile.
set_profile() {
    BENCH_PROFILE=$1
    VELLUM_BIN=${VELLUM_BIN_GIVEN:-$REPO_DIR/target/$1/vellum}
    NULL_BIN=$BENCH_DIR/target/$1/nullserver
    MCPBENCH=$BENCH_DIR/target/$1/mcpbench
}
set_profile "${BENCH_PROFILE:-release}"

ALL_SERVERS="null null-sse rmcp rmcp-stateless-json ts py vellum vellum-json vellum-stateless vellum-store vellum-redis vellum@2026"

# server_exec NAME PORT: exec the server.
server_exec() {
    local addr=127.0.0.1:$2
    case $1 in
        null) exec "$NULL_BIN" --addr "$addr" ;;
        null-sse) exec "$NULL_BIN" --addr "$addr" --sse ;;
        rmcp) exec "$RMCP_BIN" --addr "$addr" ;;
        rmcp-stateless-json) exec "$RMCP_BIN" --addr "$addr" --stateless ;;
        ts) exec node "$BENCH_DIR/peers/ts/server.mjs" --addr "$addr" ;;
        py) exec "$BENCH_DIR/peers/py/.venv/bin/python" "$BENCH_DIR/peers/py/server.py" --addr "$addr" ;;
        vellum | vellum@2026) exec "$VELLUM_BIN" serve --addr "$addr" ;;
        vellum-json) exec "$VELLUM_BIN" serve --addr "$addr" --json-response ;;
        vellum-stateless) exec "$VELLUM_BIN" serve --addr "$addr" --stateless ;;
        vellum-store) exec "$VELLUM_BIN" serve --addr "$addr" --event-store memory ;;
        vellum-redis)
            exec "$VELLUM_BIN" serve --addr "$addr" --event-store "${BENCH_REDIS_URL:?}" \
                --session-store "$BENCH_REDIS_URL" ;;
        *) echo "servers.sh: unknown server '$1'" >&2; exit 2 ;;
    esac
}

# server_flags NAME: extra mcpbench flags.
server_flags() {
    case $1 in
        *stateless*) echo "--stateless" ;;
        *@2026) echo "--protocol-version 2026-07-28" ;;
        *) echo "" ;;
    esac
}

# server_scenarios NAME: the scenarios that apply (no sessions to hold without sessions).
server_scenarios() {
    case $1 in
        *stateless* | *@2026) echo "latency throughput setup cold" ;;
        *) echo "latency throughput sessions hold streams setup cold" ;;
    esac
}

# server_peer NAME: which part of peers/build.sh the server needs (empty: none).
server_peer() {
    case $1 in
        rmcp*) echo rmcp ;;
        ts*) echo ts ;;
        py*) echo py ;;
        *) echo "" ;;
    esac
}

# server_missing NAME: why the server cannot run here (empty: it can).
server_missing() {
    case $1 in
        vellum*)
            [[ -x $VELLUM_BIN ]] || { echo "no $VELLUM_BIN"; return; }
            local help
            help=$("$VELLUM_BIN" serve --help 2>&1) || { echo "'vellum serve --help' fails"; return; }
            case $1 in
                vellum-json) [[ $help == *--json-response* ]] || echo "vellum serve has no --json-response" ;;
                vellum-stateless) [[ $help == *--stateless* ]] || echo "vellum serve has no --stateless" ;;
                vellum-store) [[ $help == *--event-store* ]] || echo "vellum serve has no --event-store" ;;
                vellum-redis)
                    [[ $help == *--session-store* ]] || { echo "vellum serve has no --session-store"; return; }
                    command -v redis-server >/dev/null || echo "no redis-server"
                    ;;
            esac
            ;;
        null*) [[ -x $NULL_BIN ]] || echo "no $NULL_BIN" ;;
        rmcp*) [[ -x $RMCP_BIN ]] || echo "no $RMCP_BIN" ;;
        ts) [[ -d $BENCH_DIR/peers/ts/node_modules ]] || echo "no peers/ts/node_modules" ;;
        py) [[ -x $BENCH_DIR/peers/py/.venv/bin/python ]] || echo "no peers/py/.venv" ;;
        *) echo "unknown server" ;;
    esac
}

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
    case ${1:-} in
        exec) server_exec "$2" "$3" ;;
        *) echo "usage: servers.sh exec NAME PORT   (servers: $ALL_SERVERS)" >&2; exit 2 ;;
    esac
fi
