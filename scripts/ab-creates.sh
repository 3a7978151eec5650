#!/usr/bin/env bash
# A/B of signed creates between two builds, alternated in one run (a fresh data dir and server per run):
#   scripts/ab-creates.sh BEFORE_DIR AFTER_DIR [ROUNDS]
# Each DIR holds an `opdesk` release binary; the `loadgen` of AFTER_DIR drives both. Prints loadgen's SUMMARY
# line per run, prefixed with the build. Loopback only; each run is 2 s warm-up + 8 s measured.
set -euo pipefail
[ $# -ge 2 ] || { echo "usage: scripts/ab-creates.sh BEFORE_DIR AFTER_DIR [ROUNDS]" >&2; exit 2; }
before=$1 after=$2 rounds=${3:-3}
run() {
  local dir=$1 port=$2 D PID
  D=$(mktemp -d)
  "$dir/opdesk" serve --data-dir "$D" --listen "127.0.0.1:$port" --log-level warn > /dev/null 2>&1 &
  PID=$!
  for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$port/healthz" > /dev/null && break; sleep 0.1; done
  echo "$(basename "$dir") $("$after/loadgen" --url "http://127.0.0.1:$port" --data-dir "$D" --server-pid "$PID" \
    --workload create --connections 32 --duration-secs 8 2>&1 | grep SUMMARY)"
  kill "$PID"; wait "$PID" 2>/dev/null || true; rm -rf "$D"
}
for _ in $(seq 1 "$rounds"); do
  run "$before" 4701
  run "$after" 4702
done
