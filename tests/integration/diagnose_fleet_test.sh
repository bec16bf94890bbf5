#!/usr/bin/env bash
# `gpulens diagnose --prometheus` over a fleet, streamed in batches of hosts,
# against a real VictoriaMetrics (data through its /api/v1/import) and a real
# Prometheus (backfilled with promtool), both on loopback. The fleet
# (lib/fleet_gen.py, 12 hosts x 8 GPUs, 1 h at 15 s) names its hosts three
# ways (Hostname, Hostname with case and domain, IP instance only), so the
# batches' host matchers must select each host's dcgm-exporter and
# node_exporter series alike.
#
# Checks, on both servers:
#   - batches of 5 hosts give byte for byte the report of one pass;
#   - each host's expected top cause, with the node's CPU evidence joined;
#   - memory is bounded by the batch: --max-series 1000 (a batch holds ~900
#     series, the fleet 2,172) refuses one pass and succeeds in batches;
#   - VictoriaMetrics and Prometheus give the same report, also with the
#     API under a path prefix (/prometheus, as Mimir and VM cluster serve it).
#
#   diagnose_fleet_test.sh GPULENS SOURCE_DIR
set -euo pipefail
gpulens=$1 src=$2
GPULENS=$gpulens
# shellcheck source=lib/stack.sh
source "$src/tests/integration/lib/stack.sh"
stack_init victoria-metrics prometheus promtool python3 curl

start=$(( $(date +%s) / 3600 * 3600 - 3 * 3600 ))
end=$(( start + 3600 ))
gen="$src/tests/integration/lib/fleet_gen.py"
python3 "$gen" --hosts 12 --start "$start" --mixed-names --jsonl "$STACK/fleet.jsonl"
python3 "$gen" --hosts 12 --start "$start" --mixed-names --om "$STACK/fleet.om"

vm_port=$(free_port)
victoria-metrics -storageDataPath="$STACK/vm-data" -httpListenAddr="127.0.0.1:$vm_port" -loggerLevel=ERROR \
  > "$STACK/victoria-metrics.log" 2>&1 &
STACK_PIDS+=($!)
wait_http "http://127.0.0.1:$vm_port/health" 30
curl -fsS --data-binary @"$STACK/fleet.jsonl" "http://127.0.0.1:$vm_port/api/v1/import" \
  || stack_fail "VictoriaMetrics refused the import"
curl -fsS "http://127.0.0.1:$vm_port/internal/force_flush" > /dev/null
deadline=$((SECONDS + 30))
until [[ $(curl -fsS "http://127.0.0.1:$vm_port/api/v1/series/count" | python3 -c 'import json,sys; print(json.load(sys.stdin)["data"][0])') == 2172 ]]; do
  ((SECONDS < deadline)) || stack_fail "VictoriaMetrics did not show the 2172 imported series"
  sleep 0.5
done

mkdir -p "$STACK/prom-data"
promtool tsdb create-blocks-from openmetrics "$STACK/fleet.om" "$STACK/prom-data" > "$STACK/promtool.log" 2>&1 \
  || stack_fail "promtool refused the fleet"
prom_port=$(free_port)
printf 'global:\n  scrape_interval: 1h\n' > "$STACK/prometheus.yml"
prometheus --config.file="$STACK/prometheus.yml" --storage.tsdb.path="$STACK/prom-data" \
  --web.listen-address="127.0.0.1:$prom_port" --storage.tsdb.retention.time=30d --log.level=warn \
  > "$STACK/prometheus.log" 2>&1 &
STACK_PIDS+=($!)
wait_http "http://127.0.0.1:$prom_port/-/ready" 30

diag() {  # out port args...
  local out=$1 port=$2; shift 2
  set +e
  "$gpulens" diagnose --prometheus "http://127.0.0.1:$port" --end "$end" --range 1h --format json "$@" \
    > "$STACK/$out.json" 2> "$STACK/$out.err"
  echo $? > "$STACK/$out.rc"
  set -e
}

for server in vm prom; do
  port=$vm_port
  [[ $server == prom ]] && port=$prom_port
  diag "$server-whole" "$port" --batch-hosts 0
  diag "$server-batched" "$port" --batch-hosts 5
  for run in whole batched; do
    [[ $(cat "$STACK/$server-$run.rc") == 3 ]] \
      || stack_fail "$server $run: exit $(cat "$STACK/$server-$run.rc"), want 3: $(cat "$STACK/$server-$run.err")"
  done
  cmp -s "$STACK/$server-whole.json" "$STACK/$server-batched.json" \
    || stack_fail "$server: batches of 5 hosts differ from one pass"
  python3 - "$STACK/$server-batched.json" <<'PY' || stack_fail "$server: unexpected report"
import json, sys
r = json.load(open(sys.argv[1]))
hosts = {h["host"]: h for h in r["hosts"]}
want = {f"gpu-{h:03d}" for h in range(12) if h not in (4, 8)} | {"gpu-004", "10.0.0.8"}
assert set(hosts) == want, sorted(hosts)
for i, name in enumerate(sorted(want, key=lambda n: 8 if n == "10.0.0.8" else int(n[4:]))):
    gpus = hosts[name]["gpus"]
    assert len(gpus) == 8, (name, len(gpus))
    for g in gpus:
        top = g["findings"][0] if g["findings"] and g["findings"][0]["severity"] != "info" else None
        if i % 4 == 0:
            assert top and top["cause"] == "input_pipeline", (name, g["gpu"], top)
            assert "host_cpu_busy" in {e["signal"] for e in top["evidence"]}, (name, top)
        elif i % 4 == 1 and g["gpu"] == "5":
            assert top and top["cause"] == "thermal_throttle", (name, g["gpu"], top)
        else:
            assert top is None, (name, g["gpu"], top)
PY
  diag "$server-whole-bounded" "$port" --batch-hosts 0 --max-series 1000
  diag "$server-batched-bounded" "$port" --batch-hosts 5 --max-series 1000
  [[ $(cat "$STACK/$server-whole-bounded.rc") == 1 ]] || stack_fail "$server: one pass fit in 1000 series"
  grep -q "more than 1000 series" "$STACK/$server-whole-bounded.err" \
    || stack_fail "$server: message $(cat "$STACK/$server-whole-bounded.err")"
  [[ $(cat "$STACK/$server-batched-bounded.rc") == 3 ]] \
    || stack_fail "$server: batches of 5 did not fit 1000 series: $(cat "$STACK/$server-batched-bounded.err")"
done
cmp -s "$STACK/vm-batched.json" "$STACK/prom-batched.json" \
  || stack_fail "VictoriaMetrics and Prometheus reports differ"

# A query API under a path prefix, as Mimir (/prometheus), VictoriaMetrics
# cluster (/select/0/prometheus) and single-node VictoriaMetrics
# (/prometheus) serve it: the same report.
set +e
"$gpulens" diagnose --prometheus "http://127.0.0.1:$vm_port/prometheus/" --end "$end" --range 1h --format json \
  --batch-hosts 5 > "$STACK/vm-prefix.json" 2> "$STACK/vm-prefix.err"
set -e
cmp -s "$STACK/vm-batched.json" "$STACK/vm-prefix.json" \
  || stack_fail "under /prometheus/: $(cat "$STACK/vm-prefix.err")"
echo "ok"
