#!/usr/bin/env bash
# Signals of a running `gpulens serve`, end to end on loopback:
# - SIGHUP applies a changed file at once: new diagnosis thresholds show in
#   /api/v1/findings, remote_write moves to a new receiver (which then gets
#   the pushes), and a changed listen address is named as needing a restart
#   while the agent keeps serving on the old one; a broken file keeps the
#   running configuration with the reason logged.
# - SIGTERM stops within the documented bound (remote_write.flush_timeout +
#   1 s) while the remote_write receiver accepts and never answers and a
#   scrape client holds a half-sent request: the request in flight is cut and
#   the queue's fate is logged.
set -euo pipefail
GPULENS=$1
source "$(dirname "$0")/lib/stack.sh"
stack_init python3 curl
here=$(dirname "$0")

# wait_grep FILE PATTERN SECONDS
wait_grep() {
  local deadline=$((SECONDS + $3))
  until grep -q -- "$2" "$1" 2>/dev/null; do
    ((SECONDS < deadline)) || stack_fail "no \"$2\" in $(basename "$1") after $3 s"
    sleep 0.2
  done
}
start_receiver() {  # port mode log
  python3 "$here/lib/fake_receiver.py" "$1" "$2" "$3" &
  STACK_PIDS+=($!)
}
threshold_of_pcie() {  # port: the pcie_util threshold of GPU 0's first finding
  curl -fsS "http://127.0.0.1:$1/api/v1/findings" | python3 -c '
import json, sys
d = json.load(sys.stdin)
for h in d["hosts"]:
    for g in h["gpus"]:
        for f in g["findings"]:
            for e in f["evidence"]:
                if e["signal"] == "pcie_util":
                    print(e["threshold"]); sys.exit()'
}

# --- SIGHUP applies what can change and names what needs a restart.
rx_a=$(free_port) rx_b=$(free_port) port=$(free_port) other=$(free_port)
start_receiver "$rx_a" ok "$STACK/rx-a.log"
start_receiver "$rx_b" ok "$STACK/rx-b.log"
cat > "$STACK/agent.yaml" <<YAML
listen: 127.0.0.1:$port
interval: 200ms
remote_write: {url: "http://127.0.0.1:$rx_a/api/v1/write"}
YAML
"$GPULENS" serve --config "$STACK/agent.yaml" --source sim --scenario pcie-saturated-h2d --sim-prefill 20m \
  >"$STACK/agent.log" 2>&1 &
agent=$!
STACK_PIDS+=($agent)
wait_http "http://127.0.0.1:$port/healthz" 20
wait_grep "$STACK/rx-a.log" "POST /api/v1/write" 10
[[ $(threshold_of_pcie "$port") == 0.8 ]] || stack_fail "default pcie_util threshold is not 0.8"

cat > "$STACK/agent.yaml" <<YAML
listen: 127.0.0.1:$other
interval: 200ms
remote_write: {url: "http://127.0.0.1:$rx_b/api/v1/write", job: reloaded}
diagnose: {pcie_util: 0.7}
YAML
kill -HUP "$agent"
wait_grep "$STACK/agent.log" "reload.*result=applied" 10
line=$(grep "reload.*result=applied" "$STACK/agent.log")
[[ $line == *"applied=\"remote_write.url, remote_write.job, diagnose.pcie_util\""* ]] || stack_fail "applied keys: $line"
[[ $line == *"needs_restart=\"listen (running values kept)\""* ]] || stack_fail "restart keys: $line"
grep -q "remote_write_stopped url=http://127.0.0.1:$rx_a/api/v1/write" "$STACK/agent.log" ||
  stack_fail "the old writer did not stop"
wait_grep "$STACK/rx-b.log" "POST /api/v1/write" 10
[[ $(threshold_of_pcie "$port") == 0.7 ]] || stack_fail "the reloaded pcie_util threshold is not in the findings"
curl -fs -o /dev/null "http://127.0.0.1:$port/metrics" || stack_fail "the old listen address stopped serving"
! curl -fs -o /dev/null --max-time 2 "http://127.0.0.1:$other/metrics" || stack_fail "listen changed without a restart"
a_before=$(wc -l < "$STACK/rx-a.log")
sleep 1
(($(wc -l < "$STACK/rx-a.log") == a_before)) || stack_fail "the old receiver still gets pushes"

printf 'interval: [not a duration\n' > "$STACK/agent.yaml"
kill -HUP "$agent"
wait_grep "$STACK/agent.log" 'reload.*kept the running configuration.*agent.yaml:' 10
kill -0 "$agent" || stack_fail "SIGHUP with a broken file stopped the agent"
[[ $(threshold_of_pcie "$port") == 0.7 ]] || stack_fail "a broken file changed the thresholds"
kill -TERM "$agent"
wait "$agent" || stack_fail "exit status $? after SIGTERM"

# --- SIGTERM with a hung receiver and a half-sent request.
hung=$(free_port) port=$(free_port)
start_receiver "$hung" hang "$STACK/hung.log"
cat > "$STACK/agent.yaml" <<YAML
interval: 200ms
remote_write: {url: "http://127.0.0.1:$hung/api/v1/write", timeout: 10m, flush_timeout: 2s}
YAML
"$GPULENS" serve --listen "127.0.0.1:$port" --config "$STACK/agent.yaml" --source sim >"$STACK/agent-term.log" 2>&1 &
agent=$!
STACK_PIDS+=($agent)
wait_http "http://127.0.0.1:$port/healthz" 20
wait_grep "$STACK/hung.log" CONNECT 10
sleep 1  # more samples queue behind the hung request
# A client that sends half a request and waits.
python3 -c '
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
time.sleep(30)' "$port" &
STACK_PIDS+=($!)
sleep 0.3
t0=$(date +%s%N)
kill -TERM "$agent"
# The bound is flush_timeout + 1 s; allow scheduling slack on a loaded machine,
# far below the 10 min request timeout a hang would wait out.
for _ in $(seq 1 100); do kill -0 "$agent" 2>/dev/null || break; sleep 0.1; done
kill -0 "$agent" 2>/dev/null && stack_fail "still running 10 s after SIGTERM"
wait "$agent" || stack_fail "exit status $? after SIGTERM"
took_ms=$((($(date +%s%N) - t0) / 1000000))
line=$(grep remote_write_stopped "$STACK/agent-term.log") || stack_fail "the queue's fate is not logged"
[[ $line == *"request_cut=yes"* && $line == *"unsent_samples="* && $line == *'fate="lost (not persisted)"'* ]] ||
  stack_fail "remote_write_stopped line: $line"
grep -q 'stopping signal=SIGTERM bound="2s + 1s"' "$STACK/agent-term.log" || stack_fail "no stopping line with the bound"
echo "PASS (SIGTERM with a hung receiver: exited after ${took_ms} ms, flush_timeout 2s)"
