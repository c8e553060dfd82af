#!/usr/bin/env bash
# Starts a Redis Cluster of three masters on loopback ports (no replicas, no persistence) and
# waits, with a deadline, until every node reports cluster_state:ok.
# Usage: bash scripts/redis-cluster.sh start DIR PORT1 PORT2 PORT3   (prints the URL)
#        bash scripts/redis-cluster.sh stop DIR
set -euo pipefail
cmd=${1:?start or stop}; dir=${2:?a folder for the nodes}
case $cmd in
  start)
    shift 2
    [ $# -eq 3 ] || { echo "three ports, please" >&2; exit 2; }
    mkdir -p "$dir"
    for p in "$@"; do
      mkdir -p "$dir/$p"
      redis-server --port "$p" --bind 127.0.0.1 --save '' --appendonly no \
        --cluster-enabled yes --cluster-node-timeout 2000 --dir "$dir/$p" \
        --daemonize yes --pidfile "$dir/$p.pid" --logfile "$dir/$p.log"
    done
    for p in "$@"; do
      [ "$p" -le 55535 ] || { echo "port $p: a cluster node's port must be 55535 or less (its bus is port + 10000)" >&2; exit 2; }
    done
    for p in "$@"; do
      up=
      for _ in $(seq 100); do redis-cli -p "$p" ping >/dev/null 2>&1 && { up=1; break; }; sleep 0.1; done
      [ -n "$up" ] || { echo "node $p did not start: $(tail -n 1 "$dir/$p.log" 2>/dev/null)" >&2; exit 1; }
    done
    redis-cli --cluster create "${@/#/127.0.0.1:}" --cluster-yes >"$dir/create.log"
    deadline=$((SECONDS + 30))
    for p in "$@"; do
      until redis-cli -p "$p" cluster info | grep -q cluster_state:ok; do
        [ $SECONDS -lt $deadline ] || { echo "node $p: no cluster_state:ok within 30 s" >&2; exit 1; }
        sleep 0.1
      done
    done
    urls=("${@/#/127.0.0.1:}")
    (IFS=,; echo "redis-cluster://${urls[*]}")
    ;;
  stop)
    for f in "$dir"/*.pid; do [ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null || true; done
    ;;
  *) echo "usage: $0 start DIR P1 P2 P3 | stop DIR" >&2; exit 2 ;;
esac
