#!/usr/bin/env bash
# Sustained throughput next to the old burst figure, in one run (issue #30): for each workload, a fresh
# `opdesk serve` and `examples/loadgen` against it, first for BURST seconds, then (a new server) for SUSTAIN
# seconds, each once with the WAL under its default ceiling and once with the ceiling out of reach
# (store.wal_max_bytes = 1 TiB: the WAL grows as it did before the ceiling). Prints loadgen's SUMMARY line
# with the peak size of the WAL file during the run and the database file at the end.
#
#   cargo build --release --bin opdesk --example loadgen
#   scripts/sustained.sh [WORKLOADS] [BURST] [SUSTAIN]     # defaults: "create list ilp" 10 120
#
# Loopback only; every server is stopped at the end of its run; data dirs are temporary.
set -euo pipefail
cd "$(dirname "$0")/.."
T="${CARGO_TARGET_DIR:-target}/release"
WORKLOADS="${1:-create list ilp}"
BURST="${2:-10}"
SUSTAIN="${3:-120}"
CEILINGS=(67108864 1099511627776)

run() { # workload seconds ceiling
    local dir port pid peak=0 wal summary
    dir="$(mktemp -d)"
    port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
    printf '[store]\nwal_max_bytes = %s\n' "$3" > "$dir/config.toml"
    OPDESK_CONFIG="$dir/config.toml" "$T/opdesk" serve --data-dir "$dir" --listen "127.0.0.1:$port" \
        --log-level error > /dev/null 2>&1 &
    pid=$!
    for _ in $(seq 1 100); do
        curl -sf "http://127.0.0.1:$port/healthz" > /dev/null 2>&1 && break
        sleep 0.1
    done
    "$T/examples/loadgen" --url "http://127.0.0.1:$port" --data-dir "$dir" --workload "$1" \
        --connections "$([[ $1 == ilp ]] && echo 8 || echo 32)" --duration-secs "$2" --warmup-secs 2 \
        > "$dir/loadgen.out" 2>&1 &
    local gen=$!
    while kill -0 "$gen" 2> /dev/null; do
        wal="$(stat -c %s "$dir/ase.sqlite3-wal" 2> /dev/null || echo 0)"
        ((wal > peak)) && peak=$wal
        sleep 0.2
    done
    wait "$gen" || true
    summary="$(grep SUMMARY "$dir/loadgen.out" || tail -3 "$dir/loadgen.out")"
    printf '%s | ceiling %s MiB | %s s | peak WAL %s MiB | db %s MiB\n' "$summary" "$(($3 >> 20))" "$2" \
        "$((peak >> 20))" "$(($(stat -c %s "$dir/ase.sqlite3") >> 20))"
    kill "$pid" 2> /dev/null || true
    wait "$pid" 2> /dev/null || true
    rm -rf "$dir"
}

for w in $WORKLOADS; do
    for secs in "$BURST" "$SUSTAIN"; do
        for c in "${CEILINGS[@]}"; do
            run "$w" "$secs" "$c"
        done
    done
done
