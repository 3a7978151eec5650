#!/usr/bin/env bash
# Acceptance run of the reference ASE's Bruno collection against opdesk (by hand; not part of .ci/run):
#
#   scripts/bruno.sh COLLECTION_DIR [serve|workshop|class|both]
#
# COLLECTION_DIR is the collection in a checkout you fetched yourself, e.g. rafiki/bruno/collections/Rafiki.
# Builds opdesk (release) unless OPDESK_BIN names a binary, installs the pinned Bruno CLI and signing helper
# (scripts/bruno/package-lock.json), then runs scripts/bruno/run.mjs: every request of the Open Payments
# examples, the SPSP folder and the Open Payments and Auth API folders, one `bru run` at a time, against
# `opdesk serve` and `opdesk workshop`, consent given with `opdesk grants approve` (`class`: one seat of
# `opdesk workshop --seats 1` with its handout's environment, consent given by the owner on the interaction
# page). Exit 0 when every request's
# own Bruno tests passed in every mode.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -lt 1 ]; then
  echo "usage: scripts/bruno.sh COLLECTION_DIR [serve|workshop|class|both]" >&2
  exit 2
fi
if [ -z "${OPDESK_BIN:-}" ]; then
  cargo build --release --locked --quiet
  target="${CARGO_TARGET_DIR:-target}"
  export OPDESK_BIN="$PWD/$target/release/opdesk"
  case "$target" in /*) export OPDESK_BIN="$target/release/opdesk" ;; esac
fi
(cd scripts/bruno && npm ci --no-audit --no-fund --silent)
exec node scripts/bruno/run.mjs "$@"
