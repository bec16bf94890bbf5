#!/usr/bin/env bash
# Fleet diagnosis end to end: a Prometheus holding 64 hosts x 8 GPUs x 1 h at
# 15 s (dcgm-exporter + node_exporter form, backfilled with promtool), then
# `gpulens diagnose --prometheus` over the hour. Target: <= 10 s.
#
#   bench/diagnose_fleet.sh GPULENS_BINARY [HOSTS]
set -euo pipefail
gpulens=${1:?usage: $0 GPULENS [HOSTS]} hosts=${2:-64}
src=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
pid=
trap '[[ -n $pid ]] && kill $pid 2>/dev/null; rm -rf "$tmp"' EXIT
start=$(( $(date +%s) / 3600 * 3600 - 3 * 3600 ))
python3 - "$src/tests/data/recordings" "$tmp/fleet.om" "$start" "$hosts" <<'PY'
import random, sys
sys.path.insert(0, sys.argv[1])
import gen
out, start, hosts = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
merged = gen.Rec(15, 3600, start)
for h in range(hosts):
    case = "input_pipeline_cpu" if h % 4 == 0 else "thermal_throttle"
    rec = gen.Rec(15, 3600, start)
    rnd = random.Random(h)
    for g in range(8):
        gen.gpu_block(rec, g, rnd, host=f"gpu{h:03d}", **({"util": 0.45, "sm": 0.2} if case != "thermal_throttle" else {}))
    gen.host_block(rec, rnd, instance=f"gpu{h:03d}:9100", cpu_busy=0.97 if case != "thermal_throttle" else 0.3)
    for k, v in rec.series.items():
        merged.series[k] = v
    merged.types.update(rec.types)
merged.write(out)
PY
echo "recording: $(( $(stat -c %s "$tmp/fleet.om") >> 20 )) MiB, $(wc -l < "$tmp/fleet.om") samples"
mkdir -p "$tmp/data"
t0=$(date +%s.%N)
promtool tsdb create-blocks-from openmetrics "$tmp/fleet.om" "$tmp/data" > /dev/null
echo "promtool backfill: $(echo "$(date +%s.%N) - $t0" | bc) s"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
printf 'global:\n  scrape_interval: 1h\n' > "$tmp/prometheus.yml"
prometheus --config.file="$tmp/prometheus.yml" --storage.tsdb.path="$tmp/data" \
  --web.listen-address="127.0.0.1:$port" --storage.tsdb.retention.time=30d > "$tmp/prom.log" 2>&1 &
pid=$!
until curl -sf "http://127.0.0.1:$port/-/ready" > /dev/null; do sleep 0.2; done
end=$(( start + 3600 ))
/usr/bin/time -f 'gpulens diagnose --prometheus: %e s, %M KiB peak RSS' \
  "$gpulens" diagnose --prometheus "http://127.0.0.1:$port" --end "$end" --range 1h --format json \
  > "$tmp/report.json" || true
python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
gpus = sum(len(h["gpus"]) for h in r["hosts"])
top = {}
for h in r["hosts"]:
    for g in h["gpus"]:
        c = g["findings"][0]["cause"] if g["findings"] else "-"
        top[c] = top.get(c, 0) + 1
print("hosts", len(r["hosts"]), "GPUs", gpus, "top causes", top)' "$tmp/report.json"
