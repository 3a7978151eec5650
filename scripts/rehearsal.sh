#!/usr/bin/env bash
# The room at full size: `opdesk workshop --seats N` and N attendees, each from only the code on its printed card
# (tests/interop-node/test/rehearsal.test.js: the handout page in headless Chromium, the zip over HTTP, the flow
# with the official Node SDK, the owner approving on the consent page, the class page at N of N, both ledgers
# exact). Each run is played twice, alternated: headless, then with the instructor's console open (tmux 120x40,
# the default log level), whose Classroom must show N/N paid. Prints one line per class: its wall time and the
# workshop's CPU per seat.
#   scripts/rehearsal.sh [SEATS=30] [RUNS=1] [OPDESK_BIN=target/release/opdesk]
# With OPDESK_SCREENSHOTS=DIR the card, consent and class pages and the console's screen are saved there.
# Loopback only; needs tmux, chromium, node 20.
set -euo pipefail
cd "$(dirname "$0")/.."
seats=${1:-30} runs=${2:-1}
bin=${3:-${CARGO_TARGET_DIR:-target}/release/opdesk}
bin=$(realpath "$bin")
for tool in tmux chromium node; do
  command -v "$tool" > /dev/null || { echo "rehearsal.sh needs $tool" >&2; exit 2; }
done
cd tests/interop-node
[ -d node_modules ] || npm ci --no-audit --no-fund > /dev/null
for _ in $(seq 1 "$runs"); do
  for console in 0 1; do
    if ! out=$(REHEARSAL_SEATS=$seats REHEARSAL_CONSOLE=$console OPDESK_BIN=$bin \
      timeout 600 node --test test/rehearsal.test.js 2>&1); then
      echo "$out" | tail -60
      echo "REHEARSAL seats=$seats console=$([ "$console" = 1 ] && echo open || echo none) FAILED"
      exit 1
    fi
    echo "$out" | grep -o 'REHEARSAL .*'
  done
done
