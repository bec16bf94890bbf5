#!/usr/bin/env bash
# agent-check.sh: the whole agent on a real NVIDIA GPU, in about two minutes.
#
# Runs `gpulens serve` on the NVML and host sources, loads GPU $GPU with
# tools/gpuload (tensor-core GEMM, then a flood of tiny kernels), and checks
# through the agent's own interfaces — /metrics, /api/v1/current,
# `gpulens snapshot` — that the three layers move as they must; lints the real
# exposition with promtool when it is installed; and reports the scrape
# latency and the cost of one NVML collection (gpulens_collection_duration_seconds).
#
#   tools/agent-check.sh                          # build/release/gpulens, GPU 0
#   GPULENS=bin/gpulens LOAD=bin/gpuload tools/agent-check.sh
# Exit 0 when every check passes.
set -uo pipefail
cd "$(dirname "$0")/.."
GPU=${GPU:-0}
GPULENS=${GPULENS:-build/release/gpulens}
LOAD=${LOAD:-build/release/gpuload}
PORT=${PORT:-19499}
OUT=${OUT:-$(mktemp -d)}
fails=0
check() {  # name, python expression over the JSON document d
  local name=$1 expr=$2
  if python3 -c "import json,sys; d=json.load(open('$OUT/current.json')); g=d['gpus'][$GPU]['fields']; sys.exit(0 if ($expr) else 1)"; then
    echo "PASS $name"
  else
    echo "FAIL $name"; fails=$((fails + 1))
  fi
}
command -v nvidia-smi >/dev/null || { echo "agent-check: no NVIDIA driver here"; exit 1; }
[ -x "$LOAD" ] || make -s -C tools/gpuload OUT="$PWD/$LOAD" || exit 1
nvidia-smi -i "$GPU" --query-gpu=name,driver_version --format=csv,noheader

"$GPULENS" serve --listen "127.0.0.1:$PORT" --source nvml,host --interval 500ms 2>"$OUT/serve.err" &
agent=$!
trap 'kill $agent 2>/dev/null' EXIT
for _ in $(seq 100); do curl -sf "127.0.0.1:$PORT/healthz" >/dev/null && break; sleep 0.1; done
cat "$OUT/serve.err"
curl -sf "127.0.0.1:$PORT/metrics" > "$OUT/idle.prom" || { echo "FAIL no /metrics"; exit 1; }
grep -q '^gpulens_source_up{source="nvml"} 1' "$OUT/idle.prom" && echo "PASS nvml source up" || { echo "FAIL nvml source up"; fails=$((fails + 1)); }
grep -q '^gpulens_simulated' "$OUT/idle.prom" && { echo "FAIL claims to be simulated"; fails=$((fails + 1)); }
if command -v promtool >/dev/null; then
  promtool check metrics < "$OUT/idle.prom" > "$OUT/lint.txt" 2>&1
  [ -s "$OUT/lint.txt" ] && { echo "FAIL promtool: $(head -3 "$OUT/lint.txt")"; fails=$((fails + 1)); } || echo "PASS promtool check metrics"
fi

echo "== gemm"
"$LOAD" gemm 14 "$GPU" > "$OUT/gemm.load" 2>&1 &
load=$!
sleep 8
curl -sf "127.0.0.1:$PORT/api/v1/current" > "$OUT/current.json"
curl -sf "127.0.0.1:$PORT/metrics" > "$OUT/gemm.prom"
"$GPULENS" snapshot --url "http://127.0.0.1:$PORT" | tee "$OUT/snapshot.out"
wait "$load"
check "gemm: utilization > 0.9" "g['gpu_utilization_ratio'] > 0.9"
check "gemm: tensor core activity > 0.3" "g.get('gpu_tensor_core_util_ratio', 0) > 0.3"
check "gemm: SM active > 0.5" "g.get('gpu_sm_active_ratio', 0) > 0.5"
check "gemm: power above idle" "g['gpu_power_watts'] > 150"
check "memory used covers the load's process" "g['gpu_memory_used_bytes'] >= max(v for k, v in g.items() if k.startswith('gpu_process_memory_used_bytes')) > 0"
check "PCIe link reported" "g['gpu_pcie_link_generation_max'] >= 4"

echo "== tiny kernels"
"$LOAD" tiny 12 "$GPU" > "$OUT/tiny.load" 2>&1 &
load=$!
sleep 7
curl -sf "127.0.0.1:$PORT/api/v1/current" > "$OUT/current.json"
wait "$load"
check "tiny: utilization high" "g['gpu_utilization_ratio'] > 0.8"
check "tiny: SM active low" "g.get('gpu_sm_active_ratio', 1) < 0.2"

echo "== costs"
for _ in $(seq 20); do curl -s -o /dev/null -w '%{time_total}\n' "127.0.0.1:$PORT/metrics"; done | sort -n | awk '{a[NR]=$1} END {printf "scrape latency: median %.2f ms, max %.2f ms (%d scrapes)\n", a[int((NR+1)/2)]*1000, a[NR]*1000, NR}'
grep '^gpulens_collection_duration_seconds' "$OUT/gemm.prom"
grep -c -v '^#' "$OUT/gemm.prom" | sed 's/^/series exported: /'
curl -sf "127.0.0.1:$PORT/api/v1/findings" | head -c 400; echo
echo "agent-check: $fails failed (output in $OUT)"
[ "$fails" -eq 0 ]
