#!/usr/bin/env bash
# The scrape source end to end, on loopback: a real node_exporter and a
# stand-in (lib/exporter_standin.py) answering as dcgm-exporter (8 A100s,
# pods on GPUs 0-3, its DCGM_EXP_* families on), vLLM (OpenMetrics by
# Accept) and Triton (with its latency summaries), beside
# targets that hang, answer 500, answer HTML, serve 50 MB, and one that dies
# while the agent runs. The agent runs --source host,scrape with a host
# source reading a fixture /proc, so precedence shows: the host source keeps
# host_cpu_seconds_total, node_exporter fills the pressure series the
# fixture lacks. Checked: the catalog values in the catalog's units, the
# GPUs with their pods, per-target gpulens_source_up with the reasons in the
# log, /metrics answering while a target hangs, the live diagnosis seeing
# the scraped GPUs, and SIGHUP re-reading the targets.
set -euo pipefail
GPULENS=$1 ROOT=$2
source "$ROOT/tests/integration/lib/stack.sh"
stack_init curl python3 prometheus-node-exporter

ne=$(free_port) sa=$(free_port) sb=$(free_port) agent=$(free_port)
prometheus-node-exporter --web.listen-address="127.0.0.1:$ne" --collector.disable-defaults --collector.cpu \
  --collector.pressure --collector.netdev >"$STACK/node_exporter.log" 2>&1 &
STACK_PIDS+=($!)
python3 "$ROOT/tests/integration/lib/exporter_standin.py" "$sa" >"$STACK/standin-a.log" 2>&1 &
STACK_PIDS+=($!)
python3 "$ROOT/tests/integration/lib/exporter_standin.py" "$sb" >"$STACK/standin-b.log" 2>&1 &
dying=$!
STACK_PIDS+=($dying)
wait_http "http://127.0.0.1:$ne/metrics" 20
wait_http "http://127.0.0.1:$sa/dcgm" 20
wait_http "http://127.0.0.1:$sb/triton" 20

# A /proc with CPU times only (USER_HZ 100: user = 123.45 s).
mkdir -p "$STACK/proc"
printf 'cpu  12345 0 2000 50000 100 0 0 0 0 0\ncpu0 12345 0 2000 50000 100 0 0 0 0 0\n' >"$STACK/proc/stat"

A="http://127.0.0.1:$sa" B="http://127.0.0.1:$sb" NE="http://127.0.0.1:$ne/metrics"
TR="$B/triton-summaries"  # Triton with summary_latencies=true, two models
DC="$A/dcgm-exp"          # dcgm-exporter with its DCGM_EXP_* rows enabled
write_config() {  # targets...
  {
    echo "sources: [host, scrape]"
    echo "source:"
    echo "  host: {proc_root: $STACK/proc}"
    echo "  scrape:"
    echo "    interval: 1s"
    echo "    timeout: 1s"
    echo "    targets:"
    for t in "$@"; do echo "      - $t"; done
  } >"$STACK/gpulens.yaml"
}
write_config "$DC" "$A/vllm" "$TR" "$NE" "$A/hang" "$A/500" "$A/garbage" "$A/big"
start_agent main "$agent" --config "$STACK/gpulens.yaml" --dcgm-names
agent_pid=${STACK_PIDS[-1]}
log="$STACK/agent-main.log"
metrics() { curl -fs --max-time 5 "http://127.0.0.1:$agent/metrics"; }
up_of() {  # target -> value of its gpulens_source_up, or "absent"
  metrics | awk -v want="gpulens_source_up{source=\"scrape\",target=\"$1\"} " 'index($0, want) == 1 {print $NF; f=1} END {if (!f) print "absent"}'
}
wait_for() {  # seconds description condition (a shell string, evaluated each time)
  local deadline=$((SECONDS + $1)) what=$2
  until eval "$3"; do
    ((SECONDS < deadline)) || stack_fail "$what"
    sleep 0.3
  done
}
value() {  # exact series text -> value
  metrics | awk -v want="$1 " 'index($0, want) == 1 {print $NF}'
}

# --- every target's state, the reasons logged -----------------------------
for t in "$DC" "$A/vllm" "$TR" "$NE"; do
  wait_for 15 "$t is not up" '[[ $(up_of "$t") == 1 ]]'
done
for t in "$A/hang" "$A/500" "$A/garbage" "$A/big"; do
  [[ $(up_of "$t") == 0 ]] || stack_fail "$t: gpulens_source_up $(up_of "$t"), want 0"
done
grep -q "scrape_target_down target=$A/hang reason=\"$A/hang: timeout after 1000 ms" "$log" || stack_fail "no timeout reason"
grep -q "scrape_target_down target=$A/500 reason=\"$A/500: HTTP 500\"" "$log" || stack_fail "no HTTP 500 reason"
grep -q "scrape_target_down target=$A/garbage reason=\"$A/garbage:1: expected a metric name\"" "$log" ||
  stack_fail "no garbage reason"
grep -q "scrape_target_down target=$A/big reason=\"$A/big: response body from .* exceeds 16777216 bytes\"" "$log" ||
  stack_fail "no size reason"
grep -q "scrape_target_up target=$DC recognised=dcgm-exporter" "$log" || stack_fail "dcgm-exporter not recognised"
grep -q "scrape_target_up target=$A/vllm recognised=vLLM" "$log" || stack_fail "vLLM not recognised"
grep -q "scrape_target_up target=$TR recognised=Triton" "$log" || stack_fail "Triton not recognised"
grep -q "scrape_target_up target=$NE recognised=node_exporter" "$log" || stack_fail "node_exporter not recognised"
[[ $(value 'gpulens_source_up{source="scrape"}') == 0 ]] || stack_fail "the source is up with four targets down"

# --- values in the catalog's units ----------------------------------------
g0='{gpu="0",gpu_uuid="GPU-5e8f3c1a-0000-4a6b-9c3d-000000000000",gpu_name="NVIDIA A100-SXM4-80GB"}'
g7='{gpu="7",gpu_uuid="GPU-5e8f3c1a-0007-4a6b-9c3d-000000000007",gpu_name="NVIDIA A100-SXM4-80GB"}'
check() {  # series want
  local got
  got=$(value "$1")
  python3 -c 'import sys; g, w = sys.argv[1], float(sys.argv[2]); sys.exit(0 if g and abs(float(g) - w) <= 1e-9 * max(1, abs(w)) else 1)' \
    "$got" "$2" || stack_fail "$1 = '${got}', want $2"
}
check "gpu_sm_occupancy_ratio$g0" 0.25
check "gpu_tensor_core_util_ratio$g0" 0.125
check "gpu_mem_bandwidth_util_ratio$g0" 0.5
check "gpu_utilization_ratio$g0" 0.93
check "gpu_memory_used_bytes$g0" $((1000 * 1048576))
check "gpu_memory_used_bytes$g7" $((8000 * 1048576))
check "gpu_sm_clock_hertz$g0" 1410000000
check "gpu_memory_clock_hertz$g0" 1593000000
check "gpu_temperature_celsius$g7" 68
check "gpu_power_watts$g0" 312.5
# Each engine its own series (labels engine, endpoint): vLLM's queue and
# Triton's are both kept, neither summed nor lost (docs/serving.md).
vl="endpoint=\"$A/vllm\",engine=\"vllm\""  # label names in order
tr="endpoint=\"$TR\",engine=\"triton\""
check "serving_requests_running{$vl}" 7
check "serving_requests_waiting{$vl}" 2
check "serving_requests_waiting{$tr}" 5
metrics >"$STACK/one.prom"
inf=$(awk -v s="serving_request_latency_seconds_bucket{$vl,le=\"+Inf\"} " 'index($0, s) == 1 {print $NF}' "$STACK/one.prom")
count=$(awk -v s="serving_request_latency_seconds_count{$vl}" '$1 == s {print $NF}' "$STACK/one.prom")
[[ -n $inf && $inf == "$count" ]] || stack_fail "latency histogram: +Inf bucket '$inf', count '$count'"
energy=$(value "gpu_energy_joules_total$g0")
python3 -c 'import sys; v = float(sys.argv[1]); sys.exit(0 if 5000 <= v < 6000 else 1)' "$energy" ||
  stack_fail "gpu_energy_joules_total = $energy, want 5000 + 1 J/s (mJ -> J)"
duration=$(awk -v s="serving_request_duration_seconds_total{$tr}" '$1 == s {print $NF}' "$STACK/one.prom")
ok=$(awk -v s="serving_requests_succeeded_total{$tr}" '$1 == s {print $NF}' "$STACK/one.prom")
python3 -c 'import sys; d, n = map(float, sys.argv[1:]); sys.exit(0 if n > 0 and abs(d / n - 0.02) < 1e-9 else 1)' \
  "$duration" "$ok" || stack_fail "Triton: $duration s over $ok requests, want 20000 us = 0.02 s each"
# Triton's request summary: the worst model's quantile="0.99" in seconds; its
# other quantiles, _sum and _count and the queue summary land nowhere.
check "serving_request_latency_p99_seconds{$tr}" 0.26
[[ $(grep -c '^serving_request_latency_p99_seconds' "$STACK/one.prom") == 1 ]] ||
  stack_fail "more than one p99 series: $(grep '^serving_request_latency_p99' "$STACK/one.prom")"
metrics >"$STACK/m.prom"  # grep -q on a pipe would cut curl short (SIGPIPE under pipefail)
grep -q '^gpu_up' "$STACK/m.prom" && stack_fail "gpu_up made up for scraped GPUs (dcgm-exporter does not give it)"
grep -q "^gpu_pcie_link_generation$g0" "$STACK/m.prom" && stack_fail "a field no target gives is present"
# Precedence: the host source (fixture /proc) keeps the CPU seconds; node_exporter fills PSI.
check 'host_cpu_seconds_total{mode="user"}' 123.45
[[ -n $(value host_pressure_cpu_waiting_seconds_total) ]] || stack_fail "node_exporter's PSI not filled in"
# Pods dcgm-exporter attached, on --dcgm-names series.
grep -q '^DCGM_FI_PROF_SM_OCCUPANCY{gpu="0",UUID="GPU-5e8f3c1a-0000-4a6b-9c3d-000000000000",pci_bus_id="00000000:07:00.0",device="nvidia0",modelName="NVIDIA A100-SXM4-80GB",Hostname="[^"]*",DCGM_FI_DRIVER_VERSION="550.144.03",container="trainer",namespace="ml",pod="llm-train-0"} 0.250000$' "$STACK/m.prom" ||
  stack_fail "GPU 0's DCGM series lack the pod dcgm-exporter attached: $(grep '^DCGM_FI_PROF_SM_OCCUPANCY{gpu="0"' "$STACK/m.prom")"
grep '^DCGM_FI_PROF_SM_OCCUPANCY{gpu="7"' "$STACK/m.prom" | grep 'pod=' >/dev/null && stack_fail "GPU 7 got a pod"

# dcgm-exporter's DCGM_EXP_* families: gauges under gpulens names, the
# catalog's labels, no window label, nothing under the DCGM_EXP_* names.
g2='{gpu="2",gpu_uuid="GPU-5e8f3c1a-0002-4a6b-9c3d-000000000002",gpu_name="NVIDIA A100-SXM4-80GB"'
g3='{gpu="3",gpu_uuid="GPU-5e8f3c1a-0003-4a6b-9c3d-000000000003",gpu_name="NVIDIA A100-SXM4-80GB"'
check "gpu_xid_errors_recent$g2,xid=\"31\"}" 2
check "gpu_xid_errors_recent$g7" 0
check "gpu_clock_events_recent${g0%\}},reason=\"sw_power_cap\"}" 12
check "gpu_clock_events_recent${g0%\}},reason=\"hw_thermal\"}" 3
check "gpu_health_status$g3,error=\"DCGM_FR_PCI_REPLAY_RATE\",watch=\"PCIE\"}" 20
check "gpu_health_status$g3,error=\"DCGM_FR_OK\",watch=\"MEM\"}" 0
check "gpu_p2p_status${g0%\}},peer_gpu=\"7\",status=\"OK\"}" 0
[[ $(grep -c '^gpu_health_status{' "$STACK/m.prom") == 80 ]] || stack_fail "not 10 health watches on each of 8 GPUs"
[[ $(grep -c '^gpu_p2p_status{' "$STACK/m.prom") == 56 ]] || stack_fail "not 7 P2P peers of each of 8 GPUs"
grep -q '^# TYPE gpu_xid_errors_recent gauge$' "$STACK/m.prom" || stack_fail "gpu_xid_errors_recent is not a gauge"
grep -Eq 'window_size_in_ms|^DCGM_EXP_' "$STACK/m.prom" && stack_fail "dcgm-exporter's window label or DCGM_EXP_* names re-emitted"
# The live diagnosis: GPU 2's XID 31 in the window and GPU 3's failed PCIE
# watch are hardware findings, through `gpulens diagnose --agent`.
rc=0
"$GPULENS" diagnose --agent "http://127.0.0.1:$agent" --format json >"$STACK/diag.json" 2>"$STACK/diag.log" || rc=$?
[[ $rc == 3 ]] || stack_fail "diagnose --agent exit $rc, want 3 (a critical finding): $(cat "$STACK/diag.log")"
python3 - "$STACK/diag.json" <<'PY' || stack_fail "diagnose --agent lacks the DCGM_EXP_* hardware findings"
import json, sys
gpus = {g["gpu"]: g for g in json.load(open(sys.argv[1]))["hosts"][0]["gpus"]}
def hw(i):
    return next(f for f in gpus[i]["findings"] if f["cause"] == "hardware_errors")
assert hw("2")["severity"] == "warning" and "XID 31" in hw("2")["action"], hw("2")
assert hw("3")["severity"] == "critical", hw("3")
assert "DCGM health watch failed: PCIE (DCGM_FR_PCI_REPLAY_RATE)" in hw("3")["action"], hw("3")
assert not any(f["cause"] == "hardware_errors" for f in gpus["5"]["findings"]), gpus["5"]
PY

# --- a hung target never stalls the agent's /metrics ----------------------
for _ in 1 2 3 4 5; do
  curl -fs --max-time 2 -o /dev/null "http://127.0.0.1:$agent/metrics" || stack_fail "/metrics did not answer while a target hangs"
done

# --- the live diagnosis and the snapshot see the scraped GPUs -------------
curl -fs "http://127.0.0.1:$agent/api/v1/findings" >"$STACK/findings.json"
python3 - "$STACK/findings.json" <<'PY' || stack_fail "findings do not list the 8 scraped GPUs"
import json, sys
gpus = json.load(open(sys.argv[1]))["hosts"][0]["gpus"]
sys.exit(0 if sorted(g["uuid"][-2:] for g in gpus) == [f"{i:02x}" for i in range(8)] else 1)
PY
# Triton's p99 reaches the live diagnosis: an agent reading dcgm-exporter
# and Triton alone (no histogram) judges the latency with it.
p99port=$(free_port)
start_agent p99 "$p99port" --source scrape --scrape "$A/dcgm" --scrape "$TR" --interval 1s
p99_of() {
  curl -fs "http://127.0.0.1:$p99port/api/v1/findings" | python3 -c '
import json, sys
for g in json.load(sys.stdin)["hosts"][0]["gpus"]:
    for f in g["findings"]:
        for e in f["evidence"]:
            if e["signal"] == "latency_p99":
                print(e["value"]); sys.exit()' 2>/dev/null || true
}
wait_for 15 "the live diagnosis has no latency_p99 from Triton's summary" '[[ $(p99_of) == 0.26 ]]'
kill "${STACK_PIDS[-1]}"
"$GPULENS" snapshot --source scrape --scrape "$A/dcgm" --format json >"$STACK/snapshot.json" 2>"$STACK/snapshot.log" ||
  stack_fail "snapshot over a scrape failed: $(cat "$STACK/snapshot.log")"
grep -q '"uuid":"GPU-5e8f3c1a-0003-4a6b-9c3d-000000000003"' "$STACK/snapshot.json" || stack_fail "snapshot lacks GPU 3"

# --- a target that dies ---------------------------------------------------
kill "$dying"
wait_for 10 "the dead Triton target is still up" '[[ $(up_of "$TR") == 0 ]]'
grep -q "scrape_target_down target=$TR reason=\"$TR: connect 127.0.0.1:$sb: Connection refused\"" "$log" ||
  stack_fail "no reason logged for the dead target"
[[ -z $(value "serving_requests_succeeded_total{$tr}") ]] || stack_fail "the dead target's series are still served"
[[ $(up_of "$DC") == 1 ]] || stack_fail "dcgm went down with Triton"

# --- SIGHUP re-reads the targets ------------------------------------------
write_config "$DC" "$A/vllm" "$NE"
kill -HUP "$agent_pid"
wait_for 10 "no scrape_targets line after SIGHUP" \
  'grep -q "scrape_targets added=none removed=$TR,$A/hang,$A/500,$A/garbage,$A/big targets=3" "$log"'
grep -q 'reload signal=SIGHUP.*applied="\?source.scrape.targets' "$log" || stack_fail "reload line does not name the targets"
wait_for 10 "the removed targets' series are still there" '[[ $(up_of "$A/hang") == absent ]]'
wait_for 10 "the source is not up once only good targets remain" "[[ \$(value 'gpulens_source_up{source=\"scrape\"}') == 1 ]]"
echo "scrape: 8 targets (node_exporter, dcgm-exporter, vLLM, Triton, hang, 500, HTML, 50 MB), a death and a reload as documented"
