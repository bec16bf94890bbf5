#!/usr/bin/env bash
# A fleet of gpulens agents running --dcgm-names (two classic, one 4.9),
# scraped by a real Prometheus: each agent's GPUs appear under the scrape's
# instance (native names) and again under dcgm-exporter's Hostname (DCGM
# names). `diagnose --prometheus` counts each GPU once (joined by UUID across
# every naming), in one pass and in batches of one host, and names each
# machine by its Hostname.
#
#   dcgm_names_fleet_test.sh GPULENS SOURCE_DIR
set -euo pipefail
gpulens=$1 src=$2
GPULENS=$gpulens
# shellcheck source=lib/stack.sh
source "$src/tests/integration/lib/stack.sh"
stack_init prometheus python3 curl

names=(node-a node-b node-c)
namings=(--dcgm-names --dcgm-names --dcgm-names=4.9)
targets=""
for i in 0 1 2; do
  # One scenario per machine: its own host name, hence its own GPU UUIDs.
  sed -e "s/hostname: sim-h100-0/hostname: ${names[$i]}/" "$src/scenarios/healthy-training.yaml" \
    > "$STACK/${names[$i]}.yaml"
  grep -q "hostname: ${names[$i]}" "$STACK/${names[$i]}.yaml" || stack_fail "scenario host name not replaced"
  port=$(free_port)
  start_agent "${names[$i]}" "$port" --source sim --scenario "$STACK/${names[$i]}.yaml" --interval 1s \
    "${namings[$i]}"
  # As a Prometheus inside the cluster sees them: instance is the pod's IP.
  targets+="      - targets: ['127.0.0.1:$port']
        labels: {instance: '10.0.0.$((i + 1)):9400'}
"
done
curl -fs "http://127.0.0.1:$port/metrics" | grep '^DCGM_FI_DEV_GPU_UTIL_RATIO{' >/dev/null \
  || stack_fail "the --dcgm-names=4.9 agent writes no DCGM_FI_DEV_GPU_UTIL_RATIO"
cat > "$STACK/prometheus.yml" <<YML
global:
  scrape_interval: 1s
scrape_configs:
  - job_name: gpulens
    static_configs:
$targets
YML
prom_port=$(free_port)
start_prometheus "$prom_port" "$STACK/prometheus.yml"
# Until every agent's GPUs have 20 s of samples under both namings.
deadline=$((SECONDS + 90))
until [[ $(curl -fs "http://127.0.0.1:$prom_port/api/v1/query" \
            --data-urlencode 'query=count(count_over_time(DCGM_FI_DEV_GPU_TEMP[1m]) >= 20) + count(count_over_time(DCGM_FI_DEV_GPU_TEMP_CELSIUS[1m]) >= 20)' \
          | python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else 0)') == 24 ]]; do
  ((SECONDS < deadline)) || stack_fail "Prometheus did not collect 20 s of every agent"
  sleep 1
done

for batch in 64 1; do
  rc=0
  "$gpulens" diagnose --prometheus "http://127.0.0.1:$prom_port" --range 1m --step 1s --batch-hosts "$batch" \
    --format json > "$STACK/out-$batch.json" 2> "$STACK/diag.err" || rc=$?
  [[ $rc == 0 || $rc == 3 ]] || { cat "$STACK/diag.err" >&2; stack_fail "diagnose exited $rc"; }
  python3 - "$STACK/out-$batch.json" <<'PY' || stack_fail "batch $batch: $(head -c 1500 "$STACK/out-$batch.json")"
import json, sys
r = json.load(open(sys.argv[1]))
hosts = sorted(h["host"] for h in r["hosts"])
assert hosts == ["node-a", "node-b", "node-c"], hosts
gpus = [g["gpu"] for h in r["hosts"] for g in h["gpus"]]
assert len(gpus) == 24, len(gpus)
for h in r["hosts"]:
    assert sorted(int(g["gpu"]) for g in h["gpus"]) == list(range(8)), (h["host"], [g["gpu"] for g in h["gpus"]])
PY
done
echo "ok"
