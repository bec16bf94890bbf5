#!/usr/bin/env bash
# The agent's listener under abuse (tests/integration/http_abuse.py): a
# pipelining client that never reads, 300 unfinished 1 MiB uploads, 600
# dripping header senders, a connection flood, a 1 MB header and a 100 KB
# URL. The agent's memory stays inside the 256 MiB the deployments give it,
# scrapes keep being answered, and each abuse gets its status code. Then
# SIGHUP: the agent re-reads its config file, keeps running, and says what it did.
set -euo pipefail
GPULENS=$1
source "$(dirname "$0")/lib/stack.sh"
stack_init python3 curl
ulimit -n 8192 2>/dev/null || true
port=$(free_port)
printf 'interval: 100ms\n' > "$STACK/agent.yaml"
start_agent abuse "$port" --source sim --config "$STACK/agent.yaml"
pid=${STACK_PIDS[-1]}
python3 "$(dirname "$0")/http_abuse.py" "$port" "$pid" || stack_fail "abuse cases"
kill -0 "$pid" || stack_fail "the agent died"

log="$STACK/agent-abuse.log"
# wait_log N: until the log holds N reload lines (10 s at most).
wait_log() {
  local deadline=$((SECONDS + 10))
  until (($(grep -c reload "$log" || true) >= $1)); do
    ((SECONDS < deadline)) || stack_fail "no reload line after SIGHUP"
    sleep 0.2
  done
}
kill -HUP "$pid"
wait_log 1
printf 'interval: [not a duration\n' > "$STACK/agent.yaml"
kill -HUP "$pid"
wait_log 2
kill -0 "$pid" || stack_fail "SIGHUP stopped the agent"
curl -sf -o /dev/null "http://127.0.0.1:$port/metrics" || stack_fail "no scrape after SIGHUP"
grep -q 'reload.*result="nothing to apply"' "$log" || stack_fail "no reload line for the unchanged file: $(grep reload "$log")"
grep 'reload' "$log" | grep 'agent.yaml:' >/dev/null || stack_fail "the broken file's reason is not logged: $(grep reload "$log")"
echo "PASS"
