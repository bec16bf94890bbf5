#!/usr/bin/env bash
# First render of the web page against a local agent with 8 simulated GPUs
# and an hour of history (bench/web_first_render.mjs in headless chromium),
# and the size of the embedded assets the page loads.
# Usage: bench/web_first_render.sh BUILD_DIR [loads, default 5]
set -euo pipefail
build=$(realpath "$1") runs=${2:-5}
src=$(cd "$(dirname "$0")/.." && pwd)
mods=$build/browser-tests
if [[ ! -f $mods/node_modules/.package-lock.json ]]; then
  mkdir -p "$mods"
  cp "$src/tests/browser/package.json" "$src/tests/browser/package-lock.json" "$mods/"
  (cd "$mods" && npm ci --ignore-scripts --no-audit --no-fund --prefer-offline --loglevel=error)
fi
cp "$src/bench/web_first_render.mjs" "$mods/"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$build/gpulens" serve --listen "127.0.0.1:$port" --source sim --scenario thermal-throttle-one-gpu --sim-prefill 1h 2>/dev/null &
agent=$!
trap 'kill $agent 2>/dev/null || true' EXIT
until curl -fs -o /dev/null "http://127.0.0.1:$port/healthz"; do sleep 0.2; done
size=0
for a in / /assets/app.js /assets/app.css; do size=$((size + $(curl -fs "http://127.0.0.1:$port$a" | wc -c))); done
echo "embedded assets the page loads: $size bytes"
node "$mods/web_first_render.mjs" "http://127.0.0.1:$port" "$runs"
