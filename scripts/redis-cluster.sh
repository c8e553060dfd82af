#!/usr/bin/env bash
# Starts a Redis Cluster on loopback ports (no persistence) and waits, with a deadline, until
# every node reports cluster_state:ok (and, with replicas, every replica is in sync with its
# master, so a failover can promote it at once).
# Usage: bash scripts/redis-cluster.sh start DIR [--replicas 1] PORT...   (prints the URL)
#        bash scripts/redis-cluster.sh stop DIR
# DIR/ports lists the ports, DIR/url the URL. Each node's settings are in DIR/PORT.conf and
# its pid in DIR/PORT.pid: a node that a test
# killed starts again with `redis-server DIR/PORT.conf` (it rejoins, as a replica if its
# replica took over). With replicas, a replica may take over whatever the age of its data
# (cluster-replica-validity-factor 0): the failover tests kill nodes one after the other.
set -euo pipefail
cmd=${1:?start or stop}; dir=${2:?a folder for the nodes}
case $cmd in
  start)
    shift 2
    replicas=0
    if [ "${1:-}" = --replicas ]; then replicas=${2:?how many replicas per master}; shift 2; fi
    want=$((3 * (replicas + 1)))
    [ $# -eq $want ] || { echo "$want ports, please (3 masters, $replicas replicas each)" >&2; exit 2; }
    for p in "$@"; do
      [ "$p" -le 55535 ] || { echo "port $p: a cluster node's port must be 55535 or less (its bus is port + 10000)" >&2; exit 2; }
    done
    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd)
    # A failed start leaves nothing running.
    trap 'for f in "$dir"/*.pid; do [ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null; done' EXIT
    for p in "$@"; do
      mkdir -p "$dir/$p"
      cat >"$dir/$p.conf" <<EOF
port $p
bind 127.0.0.1
save ""
appendonly no
cluster-enabled yes
cluster-node-timeout 2000
cluster-replica-validity-factor 0
repl-diskless-sync-delay 0
dir $dir/$p
daemonize yes
pidfile $dir/$p.pid
logfile $dir/$p.log
EOF
      redis-server "$dir/$p.conf"
    done
    for p in "$@"; do
      up=
      for _ in $(seq 100); do redis-cli -p "$p" ping >/dev/null 2>&1 && { up=1; break; }; sleep 0.1; done
      [ -n "$up" ] || { echo "node $p did not start: $(tail -n 1 "$dir/$p.log" 2>/dev/null)" >&2; exit 1; }
    done
    redis-cli --cluster create "${@/#/127.0.0.1:}" --cluster-replicas "$replicas" --cluster-yes >"$dir/create.log"
    deadline=$((SECONDS + 30))
    for p in "$@"; do
      until redis-cli -p "$p" cluster info | grep -q cluster_state:ok; do
        [ $SECONDS -lt $deadline ] || { echo "node $p: no cluster_state:ok within 30 s" >&2; exit 1; }
        sleep 0.1
      done
    done
    if [ "$replicas" -gt 0 ]; then
      for p in "$@"; do
        until info=$(redis-cli -p "$p" info replication) &&
          { grep -q role:master <<<"$info" && grep -q "connected_slaves:$replicas" <<<"$info" ||
            grep -q master_link_status:up <<<"$info"; }; do
          [ $SECONDS -lt $deadline ] || { echo "node $p: replication not in sync within 30 s" >&2; exit 1; }
          sleep 0.1
        done
      done
    fi
    echo "$*" >"$dir/ports"
    trap - EXIT
    urls=("${@/#/127.0.0.1:}")
    (IFS=,; echo "redis-cluster://${urls[*]}") | tee "$dir/url"
    ;;
  stop)
    for f in "$dir"/*.pid; do [ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null || true; done
    ;;
  *) echo "usage: $0 start DIR [--replicas N] PORT... | stop DIR" >&2; exit 2 ;;
esac
