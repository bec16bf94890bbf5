#!/usr/bin/env bash
# The agent's web page in Debian's Firefox ESR, driven over WebDriver BiDi
# (tests/browser/web_firefox_test.py; Debian's python3-websocket, no driver binary):
# every GPU of a simulated node, the thermal finding on GPU 5 only, a GPU's
# charts with the evidence threshold, no console error, no foreign resource;
# and the offline HTML reports of diagnose and trace opened from disk.
#   web_firefox_test.sh GPULENS SOURCE_DIR
set -euo pipefail
GPULENS=$1 SRC=$2
source "$(dirname "$0")/lib/stack.sh"
stack_init firefox-esr
py=/usr/bin/python3  # Debian's, with python3-websocket
$py -c 'import websocket' 2>/dev/null || { echo 'SKIP: python3-websocket not installed'; exit 77; }
port=$(free_port)
start_agent web "$port" --source sim --scenario thermal-throttle-one-gpu --sim-prefill 20m
"$GPULENS" record --source sim --scenario thermal-throttle-one-gpu --duration 30m -o "$STACK/thermal.om" 2>/dev/null
rc=0; "$GPULENS" diagnose --replay "$STACK/thermal.om" --format html -o "$STACK/diagnose.html" 2>/dev/null || rc=$?
((rc == 3)) || stack_fail "diagnose --format html exited $rc (3: findings)"
"$GPULENS" trace "$SRC"/tests/data/traces/dlrm_kineto/worker*.json --format html -o "$STACK/trace.html" 2>/dev/null ||
  stack_fail "trace --format html failed"
BIDI_PORT=$(free_port) $py "$SRC/tests/browser/web_firefox_test.py" \
  "http://127.0.0.1:$port" "diagnose=$STACK/diagnose.html" "trace=$STACK/trace.html" || stack_fail "Firefox checks"
