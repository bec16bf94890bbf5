#!/usr/bin/env bash
# Cost of reading serving engines: CPU of `gpulens serve` scraping four
# stand-in engine pages (tests/data/serving: vLLM V1, vLLM V0, SGLang with two
# tensor-parallel ranks, TGI; served from a small local server on loopback)
# every second and diagnosing them (every 15 s, as the agent does), beside an
# agent without those targets, and a real Prometheus scraping the same four
# pages every second in the same run. Both agents also run the simulator's
# 8 GPUs (scenario healthy-training: GPUs for the diagnosis to judge) and
# scrape a real node_exporter, so that the engines' cost is what they add
# beside it. dcgm-exporter is not installed here: the simulator stands for
# the GPUs.
#
#   bench/serving_cost.sh [GPULENS] [SECONDS]     # defaults: build/release/gpulens 60
#
# Prints, over the window after a 5 s warm-up, CPU % of one core of each
# process (nanoseconds on CPU summed over its threads, cpu_ns of
# tests/integration/lib/stack.sh) and the cost per engine: (agent with the
# engines - agent without) / 4, and Prometheus' / 4. Needs prometheus,
# prometheus-node-exporter, python3, curl.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
GPULENS=${1:-$ROOT/build/release/gpulens}
WINDOW=${2:-60}
source "$ROOT/tests/integration/lib/stack.sh"
stack_init prometheus prometheus-node-exporter python3 curl

ne=$(free_port); pages=$(free_port); prom=$(free_port)
prometheus-node-exporter --web.listen-address="127.0.0.1:$ne" >"$STACK/ne.log" 2>&1 &
STACK_PIDS+=($!)
# The four pages, byte for byte as the files hold them (no final newline
# where the file has none), with a Content-Length, kept alive.
python3 - "$pages" "$ROOT/tests/data/serving" >"$STACK/pages.log" 2>&1 <<'PY' &
import http.server, os, sys
port, folder = int(sys.argv[1]), sys.argv[2]
files = {"/" + n.split(".")[0]: open(os.path.join(folder, n), "rb").read()
         for n in ("vllm-v1.prom", "vllm-v0.prom", "sglang-tp2.prom", "tgi.prom")}
class Page(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_GET(self):
        body = files.get(self.path)
        if body is None:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
http.server.ThreadingHTTPServer(("127.0.0.1", port), Page).serve_forever()
PY
STACK_PIDS+=($!)
wait_http "http://127.0.0.1:$ne/metrics" 20
wait_http "http://127.0.0.1:$pages/vllm-v1" 20
NE="http://127.0.0.1:$ne/metrics"
ENGINES=("http://127.0.0.1:$pages/vllm-v1" "http://127.0.0.1:$pages/vllm-v0" "http://127.0.0.1:$pages/sglang-tp2"
         "http://127.0.0.1:$pages/tgi")

declare -A PID PORT
run_agent() {  # name targets...
  local name=$1 port
  shift
  port=$(free_port)
  local args=()
  for t in "$@"; do args+=(--scrape "$t"); done
  start_agent "$name" "$port" --source sim,scrape --scenario healthy-training "${args[@]}" --interval 1s
  PID[$name]=${STACK_PIDS[-1]}
  PORT[$name]=$port
}
run_agent engines "$NE" "${ENGINES[@]}"
run_agent baseline "$NE"

{
  echo "global: {scrape_interval: 1s, scrape_timeout: 1s}"
  echo "scrape_configs:"
  for u in "${ENGINES[@]}"; do
    echo "  - {job_name: ${u##*/}, metrics_path: /${u##*/}, static_configs: [{targets: [\"127.0.0.1:$pages\"]}]}"
  done
} >"$STACK/prom.yml"
start_prometheus "$prom" "$STACK/prom.yml"
PID[prometheus]=${STACK_PIDS[-1]}

samples=0
for u in "${ENGINES[@]}"; do samples=$((samples + $(curl -fs "$u" | grep -vc '^#' || true))); done
sleep 5
declare -A T0
for k in "${!PID[@]}"; do T0[$k]=$(cpu_ns "${PID[$k]}"); done
t0=$(date +%s.%N)
sleep "$WINDOW"
t1=$(date +%s.%N)
declare -A CPU
for k in "${!PID[@]}"; do CPU[$k]=$(( $(cpu_ns "${PID[$k]}") - T0[$k] )); done
# Each target up in the engines' agent (a target down would cost nothing).
curl -fs "http://127.0.0.1:${PORT[engines]}/metrics" >"$STACK/engines.prom" || true
up=$(grep -c '^gpulens_source_up{source="scrape",target=.*} 1' "$STACK/engines.prom" || true)

python3 - "$t0" "$t1" "$samples" "$up" "${CPU[engines]}" "${CPU[baseline]}" "${CPU[prometheus]}" "$(nproc)" \
  "$(cut -d' ' -f1-3 /proc/loadavg)" <<'PY'
import sys
t0, t1 = float(sys.argv[1]), float(sys.argv[2])
samples, up = int(sys.argv[3]), int(sys.argv[4])
engines, base, prom = (int(x) / 1e9 for x in sys.argv[5:8])
secs = t1 - t0
pct = lambda c: 100 * c / secs
print(f"window {secs:.1f} s, every 1 s; 4 engine pages, {samples} samples per round; {sys.argv[8]} CPUs, load {sys.argv[9]}")
print(f"targets up in the agent with the engines: {up} (node_exporter and the 4 engines: 5)" if up else
      "targets up in the agent with the engines: not read")
print(f"{'process':58} {'CPU % of one core':>18}")
print(f"{'gpulens, sim + node_exporter + 4 engines':58} {pct(engines):18.3f}")
print(f"{'gpulens, sim + node_exporter (baseline)':58} {pct(base):18.3f}")
print(f"{'Prometheus, the 4 engine pages':58} {pct(prom):18.3f}")
print(f"{'gpulens per engine: (with - without) / 4':58} {pct(max(0.0, engines - base)) / 4:18.3f}")
print(f"{'Prometheus per engine: / 4':58} {pct(prom) / 4:18.3f}")
print("(CPU: /proc/PID/task/*/schedstat, ns; the agents diagnose every 15 s and keep history of every series)")
PY
