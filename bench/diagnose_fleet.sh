#!/usr/bin/env bash
# Fleet diagnosis end to end: a VictoriaMetrics (data through its
# /api/v1/import) or a Prometheus (backfilled with promtool) holding HOSTS
# hosts x 8 GPUs x 1 h at 15 s in dcgm-exporter + node_exporter form
# (tests/integration/lib/fleet_gen.py: 181 series per host), then
# `gpulens diagnose --prometheus` over the hour, timed with its peak RSS.
# Targets at 1,024 hosts: <= 30 s and <= 512 MiB.
#
#   bench/diagnose_fleet.sh GPULENS_BINARY [HOSTS] [vm|prometheus] [-- DIAGNOSE_ARGS...]
#
# JOBS="0 128" loads the fleet once per value, one after the other, into a
# fresh server: without job labels (0), then with the hosts in that many
# training jobs (dcgm-exporter's hpc_job label, fleet_gen.py --jobs), so that
# the cost of grouping GPUs into jobs is measured beside the same fleet
# without it in one run (default: 0).
# BATCHES="64 0" runs once per --batch-hosts value on the same data (default:
# the default batch). BASELINE=OTHER_GPULENS runs that binary too, right after
# each run of GPULENS on the same data, and diffs the two JSON reports
# (findings must be identical): old and new code side by side. On a shared machine the wall clock includes waiting for
# a CPU: the server's CPU seconds (utime + stime of its process) are printed
# beside gpulens' own.
set -euo pipefail
gpulens=${1:?usage: $0 GPULENS [HOSTS] [vm|prometheus] [-- ARGS]} hosts=${2:-64} server=${3:-vm}
shift $(( $# < 3 ? $# : 3 ))
[[ ${1:-} == -- ]] && shift
src=$(cd "$(dirname "$0")/.." && pwd)
gen="$src/tests/integration/lib/fleet_gen.py"
tmp=$(mktemp -d)
pid=
trap '[[ -n $pid ]] && kill $pid 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
start=$(( $(date +%s) / 3600 * 3600 - 3 * 3600 ))
end=$(( start + 3600 ))
series=$(( hosts * 181 ))
echo "fleet: $hosts hosts x 8 GPUs, 1 h at 15 s, $series series, $(( series * 240 )) samples; server $server"
# Starts a fresh server (pid) holding the fleet with `jobs` training jobs.
load_fleet() {
  local jobs=$1 t0
  if [[ $server == vm ]]; then
    victoria-metrics -storageDataPath="$tmp/vm-$jobs" -httpListenAddr="127.0.0.1:$port" -loggerLevel=ERROR \
      -search.maxUniqueTimeseries=10000000 > "$tmp/vm.log" 2>&1 &
    pid=$!
    until curl -sf "http://127.0.0.1:$port/health" > /dev/null; do sleep 0.2; done
    t0=$(date +%s.%N)
    python3 "$gen" --hosts "$hosts" --start "$start" --jobs "$jobs" --jsonl - \
      | curl -sf --data-binary @- -H 'Content-Type: application/json' "http://127.0.0.1:$port/api/v1/import"
    curl -sf "http://127.0.0.1:$port/internal/force_flush" > /dev/null
    until [[ $(curl -sf "http://127.0.0.1:$port/api/v1/series/count" | python3 -c 'import json,sys; print(json.load(sys.stdin)["data"][0])') -ge $series ]]; do
      sleep 0.5
    done
    echo "generate + import: $(echo "$(date +%s.%N) - $t0" | bc) s"
  else
    python3 "$gen" --hosts "$hosts" --start "$start" --jobs "$jobs" --om "$tmp/fleet.om"
    mkdir -p "$tmp/data-$jobs"
    t0=$(date +%s.%N)
    promtool tsdb create-blocks-from openmetrics "$tmp/fleet.om" "$tmp/data-$jobs" > /dev/null
    echo "promtool backfill: $(echo "$(date +%s.%N) - $t0" | bc) s"
    rm -f "$tmp/fleet.om"
    printf 'global:\n  scrape_interval: 1h\n' > "$tmp/prometheus.yml"
    prometheus --config.file="$tmp/prometheus.yml" --storage.tsdb.path="$tmp/data-$jobs" \
      --web.listen-address="127.0.0.1:$port" --storage.tsdb.retention.time=30d > "$tmp/prom.log" 2>&1 &
    pid=$!
    until curl -sf "http://127.0.0.1:$port/-/ready" > /dev/null; do sleep 0.2; done
  fi
}
server_cpu() { awk -v hz="$(getconf CLK_TCK)" '{printf "%.2f", ($14 + $15) / hz}' "/proc/$pid/stat"; }
run_one() {  # BINARY REPORT ARGS...
  local bin=$1 report=$2 c0
  shift 2
  echo "--- $bin, batch: $batch; load average before the run: $(cut -d' ' -f1-3 /proc/loadavg)"
  c0=$(server_cpu)
  /usr/bin/time -f 'gpulens diagnose --prometheus: %e s wall, %U s user, %S s sys, %M KiB peak RSS' \
    "$bin" diagnose --prometheus "http://127.0.0.1:$port" --end "$end" --range 1h --format json "$@" \
    > "$report" || true
  echo "server CPU during the run: $(echo "$(server_cpu) - $c0" | bc) s"
  python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
gpus = sum(len(h["gpus"]) for h in r["hosts"])
top = {}
for h in r["hosts"]:
    for g in h["gpus"]:
        f = [f for f in g["findings"] if f["severity"] != "info"]
        c = f[0]["cause"] if f else "-"
        top[c] = top.get(c, 0) + 1
jobs = [j for j in r.get("jobs", []) if j["source"] != "host"]
roots = sum(1 for j in jobs if j.get("root"))
print("hosts", len(r["hosts"]), "GPUs", gpus, "jobs", len(jobs), "with a root", roots, "top causes", top)' "$report"
}
for jobs in ${JOBS:-0}; do
echo "=== fleet with $jobs training jobs (hpc_job label)"
load_fleet "$jobs"
for batch in ${BATCHES:-default}; do
  args=("$@")
  [[ $batch != default ]] && args+=(--batch-hosts "$batch")
  run_one "$gpulens" "$tmp/report.json" "${args[@]}"
  if [[ -n ${BASELINE:-} ]]; then
    run_one "$BASELINE" "$tmp/baseline.json" "${args[@]}"
    # The reports must agree but for the query statistics (counts of queries and bytes).
    python3 -c '
import json, sys
def norm(path):
    r = json.load(open(path))
    r.pop("input", None)
    return r
a, b = norm(sys.argv[1]), norm(sys.argv[2])
print("reports identical (input statistics aside)" if a == b else "REPORTS DIFFER")
sys.exit(0 if a == b else 1)' "$tmp/report.json" "$tmp/baseline.json"
  fi
done
kill "$pid"; wait "$pid" 2>/dev/null || true; pid=
rm -rf "$tmp/vm-$jobs" "$tmp/data-$jobs"
done
