#!/usr/bin/env bash
# Starts a Sentinel-managed Redis on loopback ports: a master, its replica and three
# Sentinels (quorum 2) watching it as `vellum`, and waits, with a deadline, until the replica
# is in sync and every Sentinel knows the replica and the other two Sentinels (so a failover
# can be agreed on at once).
# Usage: bash scripts/redis-sentinel.sh start DIR MASTER_PORT REPLICA_PORT S1 S2 S3   (prints the URL)
#        bash scripts/redis-sentinel.sh stop DIR
# DIR/ports lists the ports as given, DIR/url the URL. Each process's settings are in
# DIR/PORT.conf and its pid in DIR/PORT.pid: a Redis node a
# test killed starts again with `redis-server DIR/PORT.conf` (the Sentinels then make it a
# replica of whoever is master). A Sentinel declares the master down after 1 s without an
# answer (down-after-milliseconds 1000).
set -euo pipefail
cmd=${1:?start or stop}; dir=${2:?a folder}
name=vellum
case $cmd in
  start)
    [ $# -eq 7 ] || { echo "usage: $0 start DIR MASTER_PORT REPLICA_PORT S1 S2 S3" >&2; exit 2; }
    master=$3; replica=$4; sentinels=("$5" "$6" "$7")
    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd)
    # A failed start leaves nothing running.
    trap 'for f in "$dir"/*.pid; do [ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null; done' EXIT
    for p in "$master" "$replica"; do
      mkdir -p "$dir/$p"
      {
        echo "port $p"
        echo "bind 127.0.0.1"
        echo 'save ""'
        echo "appendonly no"
        echo "repl-diskless-sync-delay 0"
        echo "dir $dir/$p"
        echo "daemonize yes"
        echo "pidfile $dir/$p.pid"
        echo "logfile $dir/$p.log"
        [ "$p" = "$replica" ] && echo "replicaof 127.0.0.1 $master"
      } >"$dir/$p.conf"
      redis-server "$dir/$p.conf"
    done
    for p in "${sentinels[@]}"; do
      mkdir -p "$dir/$p"
      cat >"$dir/$p.conf" <<EOF
port $p
bind 127.0.0.1
dir $dir/$p
daemonize yes
pidfile $dir/$p.pid
logfile $dir/$p.log
sentinel monitor $name 127.0.0.1 $master 2
sentinel down-after-milliseconds $name 1000
sentinel failover-timeout $name 10000
sentinel parallel-syncs $name 1
EOF
      redis-sentinel "$dir/$p.conf"
    done
    deadline=$((SECONDS + 30))
    until redis-cli -p "$replica" info replication 2>/dev/null | grep -q master_link_status:up; do
      [ $SECONDS -lt $deadline ] || { echo "replica $replica: not in sync within 30 s" >&2; exit 1; }
      sleep 0.1
    done
    for p in "${sentinels[@]}"; do
      until m=$(redis-cli -p "$p" sentinel master "$name" 2>/dev/null) &&
        grep -A1 -x num-slaves <<<"$m" | tail -n 1 | grep -qx 1 &&
        grep -A1 -x num-other-sentinels <<<"$m" | tail -n 1 | grep -qx 2; do
        [ $SECONDS -lt $deadline ] || { echo "sentinel $p: does not know the replica and the other Sentinels within 30 s" >&2; exit 1; }
        sleep 0.1
      done
    done
    echo "$master $replica ${sentinels[*]}" >"$dir/ports"
    trap - EXIT
    urls=("${sentinels[@]/#/127.0.0.1:}")
    (IFS=,; echo "redis-sentinel://${urls[*]}/$name") | tee "$dir/url"
    ;;
  stop)
    for f in "$dir"/*.pid; do [ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null || true; done
    ;;
  *) echo "usage: $0 start DIR MASTER_PORT REPLICA_PORT S1 S2 S3 | stop DIR" >&2; exit 2 ;;
esac
