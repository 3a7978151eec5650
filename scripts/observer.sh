#!/usr/bin/env bash
# What watching costs (issue #43), the four comparisons in one run, each alternated round by round:
#   scripts/observer.sh [BIN_DIR] [ROUNDS] [SECS] [SOAK_MINUTES]
# 1. flood: a 32-connection signed-create flood (examples/loadgen) with no console, with the stream an attached
#    console reads taken by curl (the server's side of watching alone), with an attached console on the
#    Overview and with one on the Requests pane (a fresh data dir and server per run; SECS measured after 2 s
#    of warm-up): creates/s and the server's CPU per create against no console, and the console process's CPU.
# 2. keys: in runs of their own (`overview+keys`, `requests+keys`: the same flood with a console), `?` pressed
#    every 150 ms (help open, help closed) and the time until tmux shows the new frame: the key-to-frame latency
#    a person sees, p50/p99/max. The probe polls tmux in a loop, which takes CPU from the server on a 2-core
#    machine: the rates of these runs are printed but not counted in the comparisons of 1.
# 3. class: 30 seats at once (examples/classroom) against `opdesk workshop --seats 30` headless at `warn`,
#    headless at the default level and with the instructor's console open at the default level: the
#    workshop's CPU per seat and the request p99, each against headless at the default level.
# 4. soak: with SOAK_MINUTES > 0 (default 0: skipped), examples/soak for that many minutes without a console,
#    then with one (--console): requests/s of each kind and the ratio.
# BIN_DIR holds release builds of `opdesk` and the examples (default target/release and its examples/):
#   cargo build --release --bin opdesk --example loadgen --example classroom --example soak
# Consoles run in tmux at 120x40 so they really draw. Loopback only; every loop is bounded.
set -euo pipefail
target=${CARGO_TARGET_DIR:-target}
bin=${1:-$target/release} rounds=${2:-3} secs=${3:-8} soak_minutes=${4:-0}
opdesk=$bin/opdesk
example() { if [ -x "$bin/$1" ]; then echo "$bin/$1"; else echo "$bin/examples/$1"; fi; }
loadgen=$(example loadgen) classroom=$(example classroom) soak=$(example soak)
for tool in tmux python3 curl; do
  command -v "$tool" > /dev/null || { echo "observer.sh needs $tool" >&2; exit 2; }
done
tick=$(getconf CLK_TCK)
out=$(mktemp) keys_out=$(mktemp) class_out=$(mktemp)
trap 'rm -f "$out" "$keys_out" "$class_out"; tmux kill-session -t observer 2> /dev/null || true' EXIT
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat" 2> /dev/null || echo 0; }
wait_up() { for _ in $(seq 1 300); do curl -sf "http://127.0.0.1:$1/healthz" > /dev/null && return 0; sleep 0.1; done; return 1; }

# `?` toggles the help overlay of the console in tmux session $1, N times for at most S seconds; prints each
# key's latency (ms) until the pane shows the overlay opened or closed.
key_probe() {
  python3 - "$1" "$2" "$3" << 'PY'
import subprocess, sys, time
session, count, limit = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
screen = lambda: subprocess.run(["tmux", "capture-pane", "-p", "-t", session], capture_output=True, text=True).stdout
end, opened = time.monotonic() + limit, "Esc closes" in screen()
for _ in range(count):
    if time.monotonic() > end:
        break
    t0 = time.monotonic()
    subprocess.run(["tmux", "send-keys", "-t", session, "?"])
    opened = not opened
    while ("Esc closes" in screen()) != opened:
        if time.monotonic() - t0 > 5:
            break
    print(f"{(time.monotonic() - t0) * 1000:.1f}")
    time.sleep(0.15)
PY
}

flood() {
  local mode=$1 port=$2 D PID CPID c0 c1 line probe keys=
  case "$mode" in *+keys) keys=1 ;; esac
  D=$(mktemp -d)
  "$opdesk" serve --data-dir "$D" --listen "127.0.0.1:$port" --log-level warn > /dev/null 2>&1 &
  PID=$!
  wait_up "$port"
  CPID=
  if [ "$mode" = stream ]; then
    # what an attached console reads from the server, read by curl: nothing decoded, nothing drawn
    curl -sN -H "Authorization: Bearer $(cat "$D/admin.token")" \
      "http://127.0.0.1:$port/admin/events?live=summary" > /dev/null &
    CPID=$!
    sleep 1
  elif [ "$mode" != none ]; then
    tmux new-session -d -s observer -x 120 -y 40 "exec '$opdesk' --data-dir '$D'"
    sleep 2
    CPID=$(tmux list-panes -t observer -F '#{pane_pid}')
    case "$mode" in requests*) tmux send-keys -t observer 7 ;; esac
    sleep 1
  fi
  c0=0; [ -n "$CPID" ] && c0=$(cpu_ticks "$CPID")
  probe=
  if [ -n "$keys" ]; then
    (sleep 2; key_probe observer 200 "$((secs - 1))" | sed "s/^/${mode%+keys} /" >> "$keys_out") &
    probe=$!
  fi
  line=$("$loadgen" --url "http://127.0.0.1:$port" --data-dir "$D" --server-pid "$PID" \
    --workload create --connections 32 --duration-secs "$secs" 2>&1 | grep SUMMARY)
  c1=0; [ -n "$CPID" ] && c1=$(cpu_ticks "$CPID")
  [ -n "$probe" ] && wait "$probe"
  if [ "$mode" = stream ]; then
    kill "$CPID" 2> /dev/null || true
  elif [ -n "$CPID" ]; then
    tmux kill-session -t observer 2> /dev/null || true
  fi
  kill "$PID"; wait "$PID" 2> /dev/null || true; rm -rf "$D"
  # the console's CPU over the run (warm-up included), in cores
  local cores
  cores=$(awk -v t=$((c1 - c0)) -v hz="$tick" -v s=$((secs + 2)) 'BEGIN { printf "%.3f", t / hz / s }')
  echo "$mode | console $cores cores | $line" | tee -a "$out"
}

class() {
  local mode=$1 W PID line level=info
  W=$(mktemp -d); echo > "$W/base.toml"
  [ "$mode" = warn ] && level=warn
  if [ "$mode" = console ]; then
    tmux new-session -d -s observer -x 120 -y 40 \
      "OPDESK_CONFIG='$W/base.toml' exec '$opdesk' workshop --seats 30 --dir '$W' --cloud-nine-port 4740 --happy-life-port 4750"
    PID=$(tmux list-panes -t observer -F '#{pane_pid}')
  else
    OPDESK_CONFIG="$W/base.toml" "$opdesk" workshop --headless --seats 30 --dir "$W" \
      --cloud-nine-port 4740 --happy-life-port 4750 --log-level "$level" > /dev/null 2>&1 &
    PID=$!
  fi
  wait_up 4740; wait_up 4750
  line=$("$classroom" --dir "$W" --server-pid "$PID" 2>&1 | grep SUMMARY || echo "SUMMARY | failed |")
  if [ "$mode" = console ]; then
    tmux send-keys -t observer q
    for _ in $(seq 1 100); do curl -sf http://127.0.0.1:4740/healthz > /dev/null || break; sleep 0.1; done
    tmux kill-session -t observer 2> /dev/null || true
  else
    kill "$PID"; wait "$PID" 2> /dev/null || true
  fi
  rm -rf "$W"
  echo "$mode | $line" | tee -a "$class_out"
}

echo "== flood: $rounds rounds of none / stream / overview / requests, ${secs} s each, then the key probe's runs"
for _ in $(seq 1 "$rounds"); do
  flood none 4731
  flood stream 4734
  flood overview 4732
  flood requests 4733
done
for _ in $(seq 1 "$rounds"); do
  flood overview+keys 4735
  flood requests+keys 4736
done
echo "== class: $rounds rounds of 30 seats, headless at warn / headless at info / console at info"
for _ in $(seq 1 "$rounds"); do
  class warn
  class info
  class console
done
if [ "$soak_minutes" -gt 0 ]; then
  echo "== soak: $soak_minutes min without a console, then with one"
  for console in "" --console; do
    "$soak" --bin "$opdesk" --minutes "$soak_minutes" --warmup-secs 30 $console 2>&1 \
      | grep -E '^(totals|SUMMARY)' | sed "s/^/${console:-none} | /" | tee -a "$out.soak"
  done
fi

echo
echo "== flood: per mode, the mean over the rounds (the +keys runs carry the key probe: not comparisons)"
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
    printf "%-14s %10s %14s %12s %14s %14s\n", "mode", "creates/s", "server µs/req", "console", "rate ÷ none", "cpu ÷ none"
    split("none stream overview requests overview+keys requests+keys", order, " ")
    for (k = 1; k <= 6; k++) {
      m = order[k]
      if (!(m in n)) continue
      printf "%-14s %10.0f %14.0f %12.3f %14.2f %14.2f\n", m, rps[m], cpu[m], con[m], rps[m] / rps["none"], cpu[m] / cpu["none"]
    }
  }' "$out"
echo "== keys: ? to a redrawn frame during the flood (ms)"
for mode in overview requests; do
  grep "^$mode " "$keys_out" | awk '{print $2}' | sort -n | awk -v m="$mode" '
    { v[NR] = $1 }
    END { if (NR == 0) { print m ": no samples"; exit }
          i99 = int(NR * 0.99); if (i99 < 1) i99 = 1
          printf "%-9s %d keys  p50 %.1f  p99 %.1f  max %.1f\n", m, NR, v[int((NR + 1) / 2)], v[i99], v[NR] }'
done
echo "== class: per mode, each run's workshop CPU per seat and p99"
awk -F'|' '
  {
    mode = $1; gsub(/ /, "", mode)
    for (i = 1; i <= NF; i++) {
      if ($i ~ /workshop CPU/) { split($i, a, " "); cpu[mode] = cpu[mode] " " a[3]; sum[mode] += a[3] }
      if ($i ~ /^ p99 [0-9]/) { split($i, a, " "); p99[mode] = p99[mode] " " a[2]; if (a[2] <= 100) under[mode]++ }
    }
    n[mode]++
  }
  END {
    split("warn info console", order, " ")
    for (k = 1; k <= 3; k++) {
      m = order[k]
      if (!(m in n)) continue
      printf "%-8s CPU/seat (ms):%s  ÷ info %.2f | p99 (ms):%s | p99 ≤ 100 ms in %d of %d\n", m, cpu[m], (sum[m] / n[m]) / (sum["info"] / n["info"]), p99[m], under[m], n[m]
    }
  }' "$class_out"
if [ -s "$out.soak" ]; then
  echo "== soak"
  cat "$out.soak"
  rm -f "$out.soak"
fi
