#!/usr/bin/env bash
# Field selection end to end: the agent under --profile minimal serves only
# the selected GPU series, says at start which causes are not assessed, and
# its live diagnosis (/api/v1/findings) reports those causes as not assessed;
# --collectors with dcgm-exporter's own default-counters.csv exports exactly
# its DCGM names with its types, without the fields it does not list.
set -euo pipefail
GPULENS=$1 ROOT=$2
source "$ROOT/tests/integration/lib/stack.sh"
stack_init curl python3

port=$(free_port)
start_agent minimal "$port" --source sim --profile minimal --dcgm-names
grep -q 'profile minimal: not assessed: power_cap' "$STACK/agent-minimal.log" || stack_fail "no start-up note for power_cap"
curl -fs "http://127.0.0.1:$port/metrics" >"$STACK/minimal.prom"
grep -q '^gpu_sm_occupancy_ratio{gpu="0"' "$STACK/minimal.prom" || stack_fail "minimal lacks gpu_sm_occupancy_ratio"
grep -q '^DCGM_FI_PROF_SM_OCCUPANCY{gpu="0"' "$STACK/minimal.prom" || stack_fail "minimal lacks DCGM_FI_PROF_SM_OCCUPANCY"
if grep -q '^gpu_power_watts\|^DCGM_FI_DEV_POWER_USAGE' "$STACK/minimal.prom"; then stack_fail "minimal exports power"; fi
n=$(grep '^gpu_[a-z_]*{gpu="0"' "$STACK/minimal.prom" | grep -vc '^gpu_allocator' || true)
[[ $n == 10 ]] || stack_fail "minimal: $n native series on GPU 0, want 10 (besides pushed allocator series)"
# The live diagnosis judges what was collected.
deadline=$((SECONDS + 20))
until curl -fs "http://127.0.0.1:$port/api/v1/findings" >"$STACK/findings.json" &&
  python3 - "$STACK/findings.json" <<'PY'
import json, sys
g = json.load(open(sys.argv[1]))["hosts"][0]["gpus"][0]
causes = {n["cause"] for n in g.get("not_assessed", [])}
sys.exit(0 if {"power_cap", "pcie_link_degraded"} <= causes else 1)
PY
do
  ((SECONDS < deadline)) || stack_fail "findings never report power_cap and pcie_link_degraded as not assessed"
  sleep 0.5
done

port2=$(free_port)
start_agent csv "$port2" --source sim --dcgm-names --collectors "$ROOT/tests/data/dcgm-exporter/default-counters.csv"
grep -q 'DCGM_FI_DEV_VGPU_LICENSE_STATUS is not given by gpulens' "$STACK/agent-csv.log" || stack_fail "no note for the vGPU row"
curl -fs "http://127.0.0.1:$port2/metrics" >"$STACK/csv.prom"
grep -q '^# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter$' "$STACK/csv.prom" || stack_fail "energy not a counter"
grep -q '^DCGM_FI_DEV_GPU_UTIL{gpu="0".*DCGM_FI_DRIVER_VERSION=' "$STACK/csv.prom" || stack_fail "no driver label"
if grep -q '^DCGM_FI_PROF_SM_OCCUPANCY\|^DCGM_FI_DEV_PSTATE' "$STACK/csv.prom"; then stack_fail "exports a name the CSV does not list"; fi
names=$(grep -o '^DCGM_[A-Z0-9_]*' "$STACK/csv.prom" | sort -u | wc -l)
[[ $names == 24 ]] || stack_fail "$names DCGM names, want the file's 24"

# An unknown field name is a usage error naming file and line.
printf 'DCGM_FI_DEV_GPU_UTIL, gauge, x\nDCGM_FI_DEV_NOPE, gauge, y\n' >"$STACK/bad.csv"
set +e
"$GPULENS" serve --source sim --collectors "$STACK/bad.csv" 2>"$STACK/bad.err"
rc=$?
set -e
[[ $rc == 2 ]] || stack_fail "bad counters file: exit $rc, want 2"
grep -q "bad.csv:2: unknown DCGM field \"DCGM_FI_DEV_NOPE\"" "$STACK/bad.err" || stack_fail "message: $(cat "$STACK/bad.err")"
echo "field selection: minimal, collectors CSV and the bad file behave as documented"
