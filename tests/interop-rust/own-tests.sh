#!/usr/bin/env bash
# The official Open Payments Rust SDK's own integration tests (crate open-payments, the version and checksum
# this directory's Cargo.lock pins), run unmodified against a fresh `opdesk serve`.
#
# The crate as crates.io ships it is taken from cargo's registry (its checksum checked against Cargo.lock by
# `cargo fetch --locked`), copied to a scratch dir, given the `.env` its tests read (the seeded demo-client
# wallet and its key), and tested with the crate's own Cargo.lock. Nothing of it is kept in this repository.
#
# usage: OPDESK_BIN=path/to/opdesk tests/interop-rust/own-tests.sh
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
bin="${OPDESK_BIN:-$here/../../target/debug/opdesk}"
target="${OWN_TESTS_TARGET_DIR:-$HOME/.cache/opdesk/target-interop-rust-own}"

cd "$here"
cargo fetch --locked > /dev/null
src="$(cargo metadata --locked --format-version 1 |
  python3 -c 'import json, sys, os
m = json.load(sys.stdin)
print(next(os.path.dirname(p["manifest_path"]) for p in m["packages"] if p["name"] == "open-payments"))')"
version="$(basename "$src")"

work="$(mktemp -d /tmp/opdesk-sdk-own.XXXXXX)"
server=""
cleanup() {
  [ -n "$server" ] && kill "$server" 2> /dev/null && wait "$server" 2> /dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
cp -r "$src" "$work/sdk"
chmod -R u+w "$work/sdk"

data="$work/data"
mkdir -m 700 "$data"
: > "$data/config.toml"
port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
OPDESK_CONFIG="$data/config.toml" RUST_LOG=warn "$bin" serve --data-dir "$data" --listen "127.0.0.1:$port" \
  > "$work/serve.log" 2>&1 &
server=$!
base="http://127.0.0.1:$port"
for _ in $(seq 1 200); do
  curl -fsS "$base/healthz" > /dev/null 2>&1 && break
  sleep 0.1
done
curl -fsS "$base/healthz" > /dev/null || { cat "$work/serve.log"; echo "opdesk did not start" >&2; exit 1; }
kid="$(curl -fsS "$base/demo-client/jwks.json" | python3 -c 'import json, sys; print(json.load(sys.stdin)["keys"][0]["kid"])')"
cat > "$work/sdk/tests/integration/.env" <<ENV
OPEN_PAYMENTS_WALLET_ADDRESS=$base/demo-client
OPEN_PAYMENTS_KEY_ID=$kid
OPEN_PAYMENTS_PRIVATE_KEY_PATH=$data/demo-client.pem
ENV

echo "$version's own integration tests against opdesk serve at $base"
cd "$work/sdk"
# WEBDRIVER_URL names no WebDriver: the one interactive test drives the reference ASE's test wallet login page,
# which opdesk does not have, and skips itself (tests/sdk.rs approves that flow instead)
WEBDRIVER_URL="http://127.0.0.1:9" CARGO_TARGET_DIR="$target" \
  cargo test --locked --test main -- --test-threads 1 --nocapture 2>&1 | tee "$work/test.log" | grep -E '^test |test result|Skipping|panicked'
grep -q '^test result: ok' "$work/test.log"
