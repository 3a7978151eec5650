#!/usr/bin/env bash
# Coverage-guided fuzzing of opdesk's wire parsers with cargo-fuzz (libFuzzer), each target time-bounded.
#
#   scripts/fuzz.sh                  every target, 60 s each
#   scripts/fuzz.sh oer interval     only these targets
#   FUZZ_SECONDS=300 scripts/fuzz.sh longer runs
#
# Works on stable Rust: the ASan build cargo-fuzz needs is enabled with RUSTC_BOOTSTRAP=1 (set
# FUZZ_TOOLCHAIN=nightly to use a nightly toolchain instead). Installs cargo-fuzz if it is missing.
# Corpora grow in fuzz/corpus/<target> (not committed) from the committed seeds in fuzz/seeds/<target>.
# Every crash is copied to tests/fuzz-regressions/<target>/, which `cargo test` replays
# (tests/it/fuzz_replay.rs): fix the bug, keep the file, commit both.
# Exit status: 0 when no target crashed, 1 otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."

SECONDS_PER_TARGET="${FUZZ_SECONDS:-60}"
FUZZ_TARGET_DIR="${FUZZ_TARGET_DIR:-$HOME/.cache/opdesk/fuzz-target}"
ALL_TARGETS=(oer ilp_packet stream_packet stream_money signature content_digest interval amount request_json)
TARGETS=("$@")
[ ${#TARGETS[@]} -eq 0 ] && TARGETS=("${ALL_TARGETS[@]}")

if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "==> installing cargo-fuzz"
  cargo install cargo-fuzz --locked
fi

toolchain=()
if [ -n "${FUZZ_TOOLCHAIN:-}" ]; then
  toolchain=("+$FUZZ_TOOLCHAIN")
else
  export RUSTC_BOOTSTRAP=1
fi

echo "==> building ${#TARGETS[@]} fuzz targets (ASan, release)"
for t in "${TARGETS[@]}"; do
  nice -n 15 cargo "${toolchain[@]}" fuzz build --target-dir "$FUZZ_TARGET_DIR" "$t"
done

crashed=()
for t in "${TARGETS[@]}"; do
  corpus="fuzz/corpus/$t"
  artifacts="fuzz/artifacts/$t"
  mkdir -p "$corpus" "$artifacts"
  # Crashes of earlier runs were copied to tests/fuzz-regressions already.
  rm -f "$artifacts"/crash-* "$artifacts"/leak-* "$artifacts"/timeout-* "$artifacts"/oom-*
  echo "==> fuzzing $t for ${SECONDS_PER_TARGET}s"
  # Not in the artifacts dir: cargo-fuzz reports every file there as a failing input.
  mkdir -p fuzz/logs
  log="fuzz/logs/$t.log"
  status=0
  # libFuzzer writes new inputs to the first corpus dir and only reads the seeds.
  nice -n 15 cargo "${toolchain[@]}" fuzz run --target-dir "$FUZZ_TARGET_DIR" "$t" "$corpus" "fuzz/seeds/$t" -- \
    -max_total_time="$SECONDS_PER_TARGET" -timeout=10 -rss_limit_mb=2048 -max_len=4096 \
    -artifact_prefix="$artifacts/" -print_final_stats=1 >"$log" 2>&1 || status=$?
  grep -E '^(stat::number_of_executed_units|stat::new_units_added|Done [0-9]+ runs)' "$log" || true
  shopt -s nullglob
  found=("$artifacts"/crash-* "$artifacts"/leak-* "$artifacts"/timeout-* "$artifacts"/oom-*)
  shopt -u nullglob
  if [ "$status" -ne 0 ] || [ ${#found[@]} -gt 0 ]; then
    crashed+=("$t")
    mkdir -p "tests/fuzz-regressions/$t"
    for f in "${found[@]}"; do
      cp "$f" "tests/fuzz-regressions/$t/"
      echo "    crash saved: tests/fuzz-regressions/$t/$(basename "$f")"
    done
    tail -n 40 "$log"
  fi
done

if [ ${#crashed[@]} -gt 0 ]; then
  echo "==> crashes in: ${crashed[*]} (see above; replay with: cargo test --test it fuzz_replay)"
  exit 1
fi
echo "==> no crash in ${#TARGETS[@]} targets (${SECONDS_PER_TARGET}s each)"
