#!/usr/bin/env bash
# The agent on the stand-in NVML: 8 GPUs with 8 compute processes each, GPM
# on, 4 NVLinks per GPU. Measures scrape latency (curl, 50 scrapes) and the
# agent's RSS with the full hour of history allocated.
# Usage: bench/nvml-agent.sh BUILD_DIR
set -euo pipefail
build=$1
root=$(cd "$(dirname "$0")/.." && pwd)
fake=$(find "$build" -path '*nvml/fake-current*' -name 'libnvidia-ml.so.1' | head -1)
[[ -n "$fake" ]] || { echo "build the stand-in first: cmake --build $build --target gpulens_fake_nvml_current"; exit 1; }
work=$(mktemp -d)
trap 'kill $agent 2>/dev/null; rm -rf "$work"' EXIT
for g in 0 1 2 3 4 5 6 7; do
  echo "gpu $g name=\"NVIDIA H100 80GB HBM3\" arch=9 gpm=on"
  for p in 0 1 2 3 4 5 6 7; do echo "process $g pid=$((4000 + g * 8 + p)) mem=1073741824 sm=$((p * 10))"; done
  for l in 0 1 2 3; do echo "nvlink $g link=$l peer=$((g ^ 1))"; done
done > "$work/script.txt"
GPULENS_FAKE_NVML_SCRIPT="$work/script.txt" "$build/gpulens" serve --listen 127.0.0.1:19411 --source nvml,host \
  --nvml-library "$fake" --proc-root "$root/tests/data/nvml/proc" --interval 1s 2>"$work/err" &
agent=$!
for _ in $(seq 100); do curl -sf 127.0.0.1:19411/healthz >/dev/null && break; sleep 0.1; done
sleep 3
series=$(curl -s 127.0.0.1:19411/metrics | grep -vc '^#')
for _ in $(seq 50); do curl -s -o /dev/null -w '%{time_total}\n' 127.0.0.1:19411/metrics; done | sort -n |
  awk -v s="$series" '{a[NR]=$1} END {printf "series %d; scrape latency median %.2f ms, p90 %.2f ms, max %.2f ms\n", s, a[int(NR/2)]*1000, a[int(NR*0.9)]*1000, a[NR]*1000}'
curl -s 127.0.0.1:19411/metrics | grep '^gpulens_collection_duration_seconds'
echo "agent RSS: $(( $(awk '/VmRSS/ {print $2}' /proc/$agent/status) / 1024 )) MiB"
