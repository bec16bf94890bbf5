#!/usr/bin/env bash
# Cost of the scrape source: CPU of `gpulens serve --source scrape` reading
# dcgm-exporter (8 A100s, the test stand-in), a real node_exporter (default
# collectors) and vLLM (stand-in) every second, side by side with a real
# Prometheus scraping the same three endpoints every second in the same run.
# Per target: one more agent per endpoint, less a baseline agent scraping a
# 7-sample endpoint (the agent's own work: history, self metrics).
#
#   bench/scrape_cost.sh [GPULENS] [SECONDS]     # defaults: build/release/gpulens 20
#
# Prints CPU % of one core and CPU microseconds per 1000 scraped samples for
# each process (nanoseconds on CPU summed over its threads, cpu_ns of
# tests/integration/lib/stack.sh, over the window after a 3 s warm-up).
# Needs prometheus, prometheus-node-exporter, python3, curl.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
GPULENS=${1:-$ROOT/build/release/gpulens}
WINDOW=${2:-20}
source "$ROOT/tests/integration/lib/stack.sh"
stack_init prometheus prometheus-node-exporter python3 curl

ne=$(free_port); sa=$(free_port); prom=$(free_port)
prometheus-node-exporter --web.listen-address="127.0.0.1:$ne" >"$STACK/ne.log" 2>&1 &
STACK_PIDS+=($!)
python3 "$ROOT/tests/integration/lib/exporter_standin.py" "$sa" >"$STACK/standin.log" 2>&1 &
STACK_PIDS+=($!)
wait_http "http://127.0.0.1:$ne/metrics" 20
wait_http "http://127.0.0.1:$sa/dcgm" 20
DCGM="http://127.0.0.1:$sa/dcgm" NE="http://127.0.0.1:$ne/metrics" VLLM="http://127.0.0.1:$sa/vllm"
BASE="http://127.0.0.1:$sa/triton"

declare -A PID PORT
run_agent() {  # name targets...
  local name=$1 port
  shift
  port=$(free_port)
  local args=()
  for t in "$@"; do args+=(--scrape "$t"); done
  start_agent "$name" "$port" --source scrape "${args[@]}" --interval 1s
  PID[$name]=${STACK_PIDS[-1]}
  PORT[$name]=$port
}
run_agent all "$DCGM" "$NE" "$VLLM"
run_agent dcgm "$DCGM"
run_agent node "$NE"
run_agent vllm "$VLLM"
run_agent baseline "$BASE"

cat >"$STACK/prom.yml" <<YML
global: {scrape_interval: 1s, scrape_timeout: 1s}
scrape_configs:
  - {job_name: dcgm, metrics_path: /dcgm, static_configs: [{targets: ["127.0.0.1:$sa"]}]}
  - {job_name: node, static_configs: [{targets: ["127.0.0.1:$ne"]}]}
  - {job_name: vllm, metrics_path: /vllm, static_configs: [{targets: ["127.0.0.1:$sa"]}]}
YML
start_prometheus "$prom" "$STACK/prom.yml"
PID[prometheus]=${STACK_PIDS[-1]}

samples() { curl -fs "$1" | grep -vc '^#' || true; }
n_dcgm=$(samples "$DCGM") n_node=$(samples "$NE") n_vllm=$(samples "$VLLM") n_base=$(samples "$BASE")
sleep 3
declare -A T0
for k in "${!PID[@]}"; do T0[$k]=$(cpu_ns "${PID[$k]}"); done
t0=$(date +%s.%N)
sleep "$WINDOW"
t1=$(date +%s.%N)
hz=1000000000
declare -A CPU
for k in "${!PID[@]}"; do CPU[$k]=$(( $(cpu_ns "${PID[$k]}") - T0[$k] )); done

python3 - "$hz" "$t0" "$t1" "$n_dcgm" "$n_node" "$n_vllm" "$n_base" \
  "${CPU[all]}" "${CPU[dcgm]}" "${CPU[node]}" "${CPU[vllm]}" "${CPU[baseline]}" "${CPU[prometheus]}" <<'PY'
import sys
hz, t0, t1 = float(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
nd, nn, nv, nb = map(int, sys.argv[4:8])
cpu = dict(zip(["all", "dcgm", "node", "vllm", "baseline", "prometheus"], (int(x) / hz for x in sys.argv[8:14])))
secs = t1 - t0
print(f"window {secs:.1f} s, scrapes every 1 s; samples per scrape: dcgm-exporter {nd}, node_exporter {nn}, vLLM {nv}")
print(f"{'process':44} {'CPU % core':>10} {'samples/s':>10} {'CPU us / 1000 samples':>22}")
def row(name, c, n):
    per = (c / (n * secs) * 1e9) if n else float("nan")
    print(f"{name:44} {100 * c / secs:10.2f} {n:10d} {per:22.0f}")
row("gpulens, all three targets", cpu["all"], nd + nn + nv)
row("Prometheus, the same three targets", cpu["prometheus"], nd + nn + nv)
row("gpulens baseline (one 7-sample target)", cpu["baseline"], nb)
for k, n in (("dcgm", nd), ("node", nn), ("vllm", nv)):
    row(f"gpulens {k} alone, less the baseline", max(0.0, cpu[k] - cpu["baseline"]), n)
print("(CPU: /proc/PID/task/*/schedstat, ns; the agents also keep history of every mapped series)")
PY
