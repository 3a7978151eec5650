#!/usr/bin/env bash
# SQLite and PostgreSQL side by side in one run (issue #34): each round runs, one after the other, signed creates
# and then STREAM money packets into /ilp against (1) one node on SQLite, (2) one node on PostgreSQL, (3) two nodes
# on one PostgreSQL database behind examples/rrproxy (round robin per connection, one public URL).
#
#   scripts/stores.sh BIN_DIR [ROUNDS] [WORKLOADS]
#
# BIN_DIR holds release builds of `opdesk`, `loadgen` and `rrproxy` (cargo build --release --bin opdesk --example
# loadgen --example rrproxy; then target/release and target/release/examples). ROUNDS defaults to 3, WORKLOADS to
# "create ilp". PostgreSQL 15 from Debian with durable defaults (no PG_FAST), a throwaway cluster on port 55490, a
# fresh C-collation database per run. Prints one loadgen SUMMARY line per run: requests/s, the opdesk processes'
# CPU per request (both nodes summed), the generator's and the whole machine's (PostgreSQL included). Loopback
# only; every run is 2 s warm-up + 8 s measured, 32 connections.
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: scripts/stores.sh BIN_DIR [ROUNDS] [WORKLOADS]" >&2; exit 2; }
bin=$(cd "$1" && pwd) rounds=${2:-3} workloads=${3:-"create ilp"}
here=$(cd "$(dirname "$0")" && pwd)
loadgen=$bin/loadgen; [ -x "$loadgen" ] || loadgen=$bin/examples/loadgen
rrproxy=$bin/rrproxy; [ -x "$rrproxy" ] || rrproxy=$bin/examples/rrproxy
psql=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)/psql
pgdir=$(mktemp -d /tmp/opdesk-pg.XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  "$here/pg-cluster.sh" stop "$pgdir" >/dev/null 2>&1 || true
  rm -rf "$pgdir"
}
trap cleanup EXIT
url=$("$here/pg-cluster.sh" start "$pgdir" 55490 2>/dev/null | tail -1)

wait_up() {
  for _ in $(seq 1 200); do curl -sf "http://127.0.0.1:$1/healthz" >/dev/null && return 0; sleep 0.05; done
  echo "nothing answers on port $1" >&2; return 1
}

# serve NAME DIR PORT [DB]: an opdesk serve in the background; its pid in $served
serve() {
  local dir=$2 port=$3 db=${4:-}
  if [ -n "$db" ]; then
    printf '%s[store]\nurl = "%s"\n' "${public:-}" "${url%/postgres}/$db" > "$dir/config.toml"
  else
    printf '%s' "${public:-}" > "$dir/config.toml"
  fi
  OPDESK_CONFIG=$dir/config.toml "$bin/opdesk" serve --data-dir "$dir" --listen "127.0.0.1:$port" --log-level warn \
    >/dev/null 2>&1 &
  served=$!
  pids+=("$served")
  wait_up "$port"
}

fresh_db() { # (called in a subshell: the name must not depend on a counter)
  local name
  name="b$(date +%s%N)"
  "$psql" "$url" -qc "CREATE DATABASE $name TEMPLATE template0 LC_COLLATE 'C' LC_CTYPE 'C'"
  echo "$name"
}

load() { # label url data_dir pids workload
  echo "$1 $("$loadgen" --url "$2" --data-dir "$3" --server-pid "$4" --workload "$5" --connections 32 \
    --duration-secs 8 2>&1 | grep SUMMARY)"
}

stop_all() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  pids=()
}

for _ in $(seq 1 "$rounds"); do
  for w in $workloads; do
    public=""
    d=$(mktemp -d); serve sqlite "$d" 4701; load "sqlite     " "http://127.0.0.1:4701" "$d" "$served" "$w"
    stop_all; rm -rf "$d"

    d=$(mktemp -d); serve pg "$d" 4702 "$(fresh_db)"; load "pg-1-node  " "http://127.0.0.1:4702" "$d" "$served" "$w"
    stop_all; rm -rf "$d"

    db=$(fresh_db); a=$(mktemp -d); b=$(mktemp -d); public='public_url = "http://127.0.0.1:4710"'$'\n'
    serve pg "$a" 4711 "$db"; pa=$served
    serve pg "$b" 4712 "$db"; pb=$served
    "$rrproxy" --listen 127.0.0.1:4710 --to 127.0.0.1:4711,127.0.0.1:4712 >/dev/null 2>&1 &
    pids+=("$!")
    wait_up 4710
    load "pg-2-nodes " "http://127.0.0.1:4710" "$a" "$pa,$pb" "$w"
    stop_all; rm -rf "$a" "$b"
  done
done
