#!/usr/bin/env bash
# The agent's listener under abuse (tests/integration/http_abuse.py): a
# pipelining client that never reads, 300 unfinished 1 MiB uploads, 600
# dripping header senders, a connection flood, a 1 MB header and a 100 KB
# URL. The agent's memory stays inside the 256 MiB the deployments give it,
# scrapes keep being answered, and each abuse gets its status code.
set -euo pipefail
GPULENS=$1
source "$(dirname "$0")/lib/stack.sh"
stack_init python3 curl
ulimit -n 8192 2>/dev/null || true
port=$(free_port)
start_agent abuse "$port" --source sim --interval 100ms
pid=${STACK_PIDS[-1]}
python3 "$(dirname "$0")/http_abuse.py" "$port" "$pid" || stack_fail "abuse cases"
kill -0 "$pid" || stack_fail "the agent died"
echo "PASS"
