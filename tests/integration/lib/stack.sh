# Helpers for tests that run the agent, Prometheus and Alertmanager on
# loopback: free ports, start/stop with a cleanup trap, readiness waits and
# API queries. Source it after `set -euo pipefail`; call stack_init first.
#
#   stack_init                               # temp dir $STACK, trap cleanup
#   port=$(free_port)
#   start_agent NAME PORT ARGS...            # gpulens serve on 127.0.0.1:PORT
#   start_prometheus PORT CONFIG             # waits until ready
#   prom_query PORT 'up'                     # prints the JSON answer
#   cpu_ns PID                               # CPU time of a process so far
# Every server is killed on exit, and each wait has a deadline.

STACK_PIDS=()

stack_init() {
  for tool in "$@"; do
    command -v "$tool" >/dev/null || { echo "SKIP: $tool not installed"; exit 77; }
  done
  STACK=$(mktemp -d)
  trap stack_cleanup EXIT
}

stack_cleanup() {
  local pid
  for pid in "${STACK_PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${STACK_PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$STACK"
}

stack_fail() {
  echo "FAIL: $*" >&2
  local log
  for log in "$STACK"/*.log; do
    [[ -f $log ]] || continue
    echo "--- $(basename "$log") (tail)" >&2
    tail -15 "$log" >&2
  done
  exit 1
}

free_port() {
  /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# wait_http URL SECONDS: until URL answers 200.
wait_http() {
  local deadline=$((SECONDS + $2))
  until curl -fs -o /dev/null --max-time 2 "$1"; do
    ((SECONDS < deadline)) || stack_fail "$1 not ready after $2 s"
    sleep 0.3
  done
}

start_agent() {  # name port args...
  local name=$1 port=$2; shift 2
  "$GPULENS" serve --listen "127.0.0.1:$port" "$@" >"$STACK/agent-$name.log" 2>&1 &
  STACK_PIDS+=($!)
  wait_http "http://127.0.0.1:$port/healthz" 20
}

start_prometheus() {  # port config
  local port=$1 config=$2
  prometheus --config.file="$config" --storage.tsdb.path="$STACK/prom-data" \
    --web.listen-address="127.0.0.1:$port" --log.level=warn >"$STACK/prometheus.log" 2>&1 &
  STACK_PIDS+=($!)
  wait_http "http://127.0.0.1:$port/-/ready" 30
}

start_alertmanager() {  # port config
  local port=$1 config=$2
  prometheus-alertmanager --config.file="$config" --storage.path="$STACK/am-data" \
    --web.listen-address="127.0.0.1:$port" --cluster.listen-address= --log.level=warn \
    >"$STACK/alertmanager.log" 2>&1 &
  STACK_PIDS+=($!)
  wait_http "http://127.0.0.1:$port/-/ready" 30
}

prom_query() {  # port expr
  curl -fsS --max-time 10 "http://127.0.0.1:$1/api/v1/query" --data-urlencode "query=$2"
}

# cpu_ns PID: nanoseconds the process has run on a CPU, summed over its
# threads (the first field of /proc/PID/task/*/schedstat). The benchmarks'
# CPU per scrape or per engine: /proc/PID/stat's ticks are 10 ms, too coarse
# for a few thousand scrapes of a cached page.
cpu_ns() { cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{s += $1} END {printf "%d\n", s}'; }
