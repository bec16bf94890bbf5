#!/usr/bin/env bash
# remote_write throughput from one writer into a local VictoriaMetrics.
#
#   bench/remote_write.sh BUILD_DIR [SERIES] [STEPS]
#
# Runs remote_write_driver flat out (publish, snapshot, encode, compress,
# POST; the producer waits only when the queue is full) for several batch
# sizes, and prints per run: samples/s (all samples accepted, wall time from
# first snapshot to drained queue), CPU of the writer per 100k samples
# (process CPU minus the synthetic source filling frames), and the receiver's CPU per 100k.
set -euo pipefail
build=${1:?usage: $0 BUILD_DIR [SERIES] [STEPS]}
series=${2:-1000} steps=${3:-500}
driver=$build/src/export/remote_write/remote_write_driver
total=$((series * steps))

tmp=$(mktemp -d)
port=$("$driver" --free-port)
victoria-metrics -storageDataPath "$tmp/data" -httpListenAddr "127.0.0.1:$port" -retentionPeriod 1 \
  -loggerLevel WARN >"$tmp/vm.log" 2>&1 &
vm=$!
trap 'kill $vm; wait $vm 2>/dev/null; rm -rf "$tmp"' EXIT
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/health" >/dev/null && break; sleep 0.1; done

vm_cpu() { awk '{print ($14 + $15) / 100}' "/proc/$vm/stat"; }  # utime + stime, in s at 100 Hz

printf '%-8s %10s %12s %20s %20s\n' batch samples samples/s "writer CPU ms/100k" "VM CPU ms/100k"
for batch in 500 2000 10000; do
  before=$(vm_cpu)
  out=$("$driver" --url "http://127.0.0.1:$port/api/v1/write" --series "$series" --steps "$steps" \
    --interval-ms 0 --batch "$batch" --queue 200000 --instance "bench$batch")
  after=$(vm_cpu)
  jq -e --argjson n $total '.sent == $n' <<<"$out" >/dev/null || { echo "lost samples: $out" >&2; exit 1; }
  jq -r --argjson n $total --argjson b "$batch" --argjson vm "$(awk "BEGIN { print $after - $before }")" \
    '[$b, $n, ($n / .wall_s | floor), ((.cpu_s - .producer_cpu_s) / $n * 1e8 | floor), ($vm / $n * 1e8 | floor)]
     | @tsv' <<<"$out" | awk -F'\t' '{printf "%-8s %10s %12s %20s %20s\n", $1, $2, $3, $4, $5}'
done
