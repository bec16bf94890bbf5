#!/usr/bin/env bash
# The agent's web page in Debian's chromium (tests/browser/web_test.mjs):
# every GPU of a simulated node, the thermal finding on GPU 5 only, a GPU's
# charts, the evidence with its threshold, no console error, nothing fetched
# from another host; the evidence charts from the node's series too (a second
# agent serving inference: the latency p99 from its histogram); a third on
# two engines: a service line per engine on its GPUs' cards and the service
# view (kind, model, endpoint, GPUs, queue, KV, p99/TTFT, finding). Also: the
# embedded assets stay within 300 KB.
#   web_page_test.sh GPULENS SOURCE_DIR BUILD_DIR [SCREENSHOT_DIR]
set -euo pipefail
GPULENS=$1 SRC=$2 BUILD=$3 SHOTS=${4:-}
source "$(dirname "$0")/lib/stack.sh"
stack_init chromium node npm curl

# playwright-core from the lock file, once per build tree.
mods=$BUILD/browser-tests
if [[ ! -f $mods/node_modules/.package-lock.json || $SRC/tests/browser/package-lock.json -nt $mods/node_modules/.package-lock.json ]]; then
  mkdir -p "$mods"
  cp "$SRC/tests/browser/package.json" "$SRC/tests/browser/package-lock.json" "$mods/"
  (cd "$mods" && npm ci --ignore-scripts --no-audit --no-fund --prefer-offline --loglevel=error) >"$STACK/npm.log" 2>&1 ||
    stack_fail "npm ci of the browser tests: $(tail -3 "$STACK/npm.log")"
fi
cp "$SRC/tests/browser/web_test.mjs" "$mods/"

port=$(free_port)
start_agent web "$port" --source sim --scenario thermal-throttle-one-gpu --sim-prefill 20m
base="http://127.0.0.1:$port"
size=0
for a in / /assets/app.js /assets/app.css; do
  n=$(curl -fs "$base$a" | wc -c) || stack_fail "$a not served"
  size=$((size + n))
done
((size <= 300 * 1024)) || stack_fail "embedded assets are $size bytes, over 300 KB"
echo "assets: $size bytes"
serving_port=$(free_port)
start_agent serving "$serving_port" --source sim --scenario kernel-launch-bound-inference --sim-prefill 20m
services_port=$(free_port)
start_agent services "$services_port" --source sim --scenario two-engines --sim-prefill 20m --interval 5s
SERVING_URL="http://127.0.0.1:$serving_port" SERVICES_URL="http://127.0.0.1:$services_port" node "$mods/web_test.mjs" "$base" $SHOTS || stack_fail "browser checks"
