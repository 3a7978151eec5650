#!/usr/bin/env bash
# What watching costs: a 32-connection signed-create flood with no console, with an attached console on the
# Overview and with one on the Requests pane, alternated in one run (a fresh data dir and server per run):
#   scripts/observer.sh [BIN_DIR] [ROUNDS] [SECS]
# BIN_DIR holds `opdesk` and `loadgen` release binaries (default: target/release and its examples). The
# console runs in tmux at 120x40 so it really draws. Prints loadgen's SUMMARY per run with the console
# process's CPU over the run, then per mode the creates/s and server CPU per create against no console.
# Loopback only; each run is 2 s warm-up + SECS measured (default 8).
set -euo pipefail
target=${CARGO_TARGET_DIR:-target}
bin=${1:-$target/release} rounds=${2:-3} secs=${3:-8}
opdesk=$bin/opdesk
loadgen=$bin/loadgen
[ -x "$loadgen" ] || loadgen=$bin/examples/loadgen
command -v tmux > /dev/null || { echo "observer.sh needs tmux" >&2; exit 2; }
tick=$(getconf CLK_TCK)
out=$(mktemp)
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat" 2> /dev/null || echo 0; }
run() {
  local mode=$1 port=$2 D PID CPID c0 c1 line
  D=$(mktemp -d)
  "$opdesk" serve --data-dir "$D" --listen "127.0.0.1:$port" --log-level warn > /dev/null 2>&1 &
  PID=$!
  for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$port/healthz" > /dev/null && break; sleep 0.1; done
  CPID=
  if [ "$mode" != none ]; then
    tmux new-session -d -s observer -x 120 -y 40 \
      "exec '$opdesk' --data-dir '$D'"
    sleep 2
    CPID=$(tmux list-panes -t observer -F '#{pane_pid}')
    [ "$mode" = requests ] && tmux send-keys -t observer 7
    sleep 1
  fi
  c0=0; [ -n "$CPID" ] && c0=$(cpu_ticks "$CPID")
  line=$("$loadgen" --url "http://127.0.0.1:$port" --data-dir "$D" --server-pid "$PID" \
    --workload create --connections 32 --duration-secs "$secs" 2>&1 | grep SUMMARY)
  c1=0; [ -n "$CPID" ] && c1=$(cpu_ticks "$CPID")
  [ -n "$CPID" ] && { tmux kill-session -t observer 2> /dev/null || true; }
  kill "$PID"; wait "$PID" 2> /dev/null || true; rm -rf "$D"
  # the console's CPU over the run (warm-up included), in cores
  local cores
  cores=$(awk -v t=$((c1 - c0)) -v hz="$tick" -v s=$((secs + 2)) 'BEGIN { printf "%.3f", t / hz / s }')
  echo "$mode | console $cores cores | $line" | tee -a "$out"
}
for _ in $(seq 1 "$rounds"); do
  run none 4731
  run overview 4732
  run requests 4733
done
# per mode: mean creates/s and server CPU per create (µs), and the ratios against no console
awk -F'|' '
  {
    mode = $1; gsub(/ /, "", mode)
    for (i = 1; i <= NF; i++) {
      if ($i ~ /req\/s/) { split($i, a, " "); rps[mode] += a[1] }
      if ($i ~ /^ CPU /) { split($i, a, " "); v = a[2]; sub(/µs.*/, "", v); cpu[mode] += v }
      if ($i ~ /console/) { split($i, a, " "); con[mode] += a[2] }
    }
    n[mode]++
  }
  END {
    for (m in n) { rps[m] /= n[m]; cpu[m] /= n[m]; con[m] /= n[m] }
    printf "%-9s %10s %14s %12s %14s %14s\n", "mode", "creates/s", "server µs/req", "console", "rate ÷ none", "cpu ÷ none"
    split("none overview requests", order, " ")
    for (k = 1; k <= 3; k++) {
      m = order[k]
      if (!(m in n)) continue
      printf "%-9s %10.0f %14.0f %12.3f %14.2f %14.2f\n", m, rps[m], cpu[m], con[m], rps[m] / rps["none"], cpu[m] / cpu["none"]
    }
  }' "$out"
rm -f "$out"
