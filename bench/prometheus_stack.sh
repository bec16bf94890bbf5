#!/usr/bin/env bash
# Cost of gpulens in Prometheus: series per GPU, rule evaluation time of the
# shipped rules, and TSDB bytes per sample, with AGENTS simulated 8-GPU nodes
# scraped every second for SECONDS_RUN seconds.
#
#   bench/prometheus_stack.sh GPULENS [AGENTS=4] [SECONDS_RUN=120]
#
# Bytes per sample come from a TSDB snapshot (the head written as a block):
# size of its chunks and index over the samples Prometheus appended.
set -euo pipefail
GPULENS=$1 agents=${2:-4} run_s=${3:-120}
root=$(cd "$(dirname "$0")/.." && pwd)
source "$root/tests/integration/lib/stack.sh"
stack_init prometheus curl

targets=""
for i in $(seq 1 "$agents"); do
  port=$(free_port)
  start_agent "n$i" "$port" --source sim --scenario healthy-training --interval 1s --seed "$i"
  targets+="'127.0.0.1:$port',"
done
prom_port=$(free_port)
cat >"$STACK/prometheus.yml" <<YAML
global: {scrape_interval: 1s, evaluation_interval: 1s}
rule_files: [$root/deploy/prometheus/gpulens-rules.yml]
scrape_configs:
  - job_name: gpulens
    static_configs: [{targets: [${targets%,}]}]
YAML
prometheus --config.file="$STACK/prometheus.yml" --storage.tsdb.path="$STACK/data" --web.enable-admin-api \
  --web.listen-address="127.0.0.1:$prom_port" --log.level=warn >"$STACK/prometheus.log" 2>&1 &
STACK_PIDS+=($!)
wait_http "http://127.0.0.1:$prom_port/-/ready" 30
sleep "$run_s"

# Prometheus' own metrics (it does not scrape itself here).
self_metric() { curl -fsS "http://127.0.0.1:$prom_port/metrics" | grep "^$1" | sed 's/^[^{ ]*//'; }
gpus=$((agents * 8))
scraped=$(prom_query "$prom_port" 'sum(scrape_samples_scraped{job="gpulens"})' | /usr/bin/python3 -c 'import json,sys; print(int(float(json.load(sys.stdin)["data"]["result"][0]["value"][1])))')
gpu_series=$(prom_query "$prom_port" 'count({job="gpulens", gpu_uuid!=""})' | /usr/bin/python3 -c 'import json,sys; print(int(float(json.load(sys.stdin)["data"]["result"][0]["value"][1])))')
appended=$(curl -fsS "http://127.0.0.1:$prom_port/metrics" | awk '/^prometheus_tsdb_head_samples_appended_total/ {s += $NF} END {print s}')
snap=$(curl -fsS -XPOST "http://127.0.0.1:$prom_port/api/v1/admin/tsdb/snapshot" | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["data"]["name"])')
bytes=$(find "$STACK/data/snapshots/$snap" -type f \( -path '*/chunks/*' -o -name index \) -printf '%s\n' | awk '{s+=$1} END {print s}')
echo "agents=$agents gpus=$gpus run=${run_s}s scrape=1s eval=1s"
echo "series scraped per scrape (all targets): $scraped; GPU-labelled: $gpu_series; per GPU: $((gpu_series / gpus)) GPU series + $(((scraped - gpu_series) / agents)) node series per node"
echo "rule group last duration (s):"; self_metric prometheus_rule_group_last_duration_seconds
echo "rule evaluation duration summary (s):"; self_metric 'prometheus_rule_evaluation_duration_seconds{'
echo "rule group total time / evaluations:"; self_metric prometheus_rule_group_duration_seconds_sum; self_metric prometheus_rule_group_duration_seconds_count
/usr/bin/python3 - "$bytes" "$appended" "$gpu_series" "$gpus" "$scraped" "$agents" <<'PY'
import sys
b, n, gs, gpus, scraped, agents = float(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
bps = b / n
per_gpu = scraped / gpus  # every series of a node shared among its 8 GPUs
print(f"TSDB snapshot: {b/1e6:.2f} MB for {n:.0f} samples = {bps:.2f} bytes/sample (chunks + index)")
for interval in (15, 1):
    day = per_gpu * 86400 / interval * bps
    print(f"storage per GPU-day at {interval:2d} s: {day/1e6:.1f} MB ({per_gpu:.0f} series/GPU incl. node share); "
          f"article's 8 series/GPU at this rate: {8*86400/interval*bps/1e6:.2f} MB")
PY
