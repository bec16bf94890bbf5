#!/usr/bin/env bash
# A dcgm-exporter page of a MIG node (tests/data/dcgm-exporter/golden-mig.prom:
# a whole A100 and one in MIG mode with two GPU instances, pods on the whole
# GPU and on one instance), served from a plain file server on loopback and
# scraped by `gpulens serve --source scrape --dcgm-names`: the agent's
# /metrics gives the same dcgm-exporter series back, labels and values,
# the instances' gpu_mig_* series under gpulens' names, and the live
# diagnosis judges each GPU instance as an entity of its own. Then beside
# the stand-in NVML (an A100-class GPU without GPM, and one in MIG mode):
# dcgm-exporter's profiling fields fill NVML's own GPU and MIG instance
# series, NVML keeps what it has, and dcgm-exporter's pods label the GPUs
# the agent attributes to no pod (no kubelet socket, no process in a pod).
set -euo pipefail
GPULENS=$1 FAKE_NVML=$2 ROOT=$3
source "$ROOT/tests/integration/lib/stack.sh"
stack_init curl python3

files=$(free_port) agent=$(free_port)
python3 -m http.server --bind 127.0.0.1 --directory "$ROOT/tests/data/dcgm-exporter" "$files" \
  >"$STACK/files.log" 2>&1 &
STACK_PIDS+=($!)
wait_http "http://127.0.0.1:$files/golden-mig.prom" 20
NODE_NAME=gpu-node-5 start_agent main "$agent" --source scrape --scrape "http://127.0.0.1:$files/golden-mig.prom" \
  --dcgm-names --interval 1s
# Saves an agent's /metrics to FILE once a line matches REGEX (15 s at most).
wait_metrics() {  # port file regex description
  local deadline=$((SECONDS + 15))
  until curl -fs --max-time 5 "http://127.0.0.1:$1/metrics" >"$2" && grep -q "$3" "$2"; do
    ((SECONDS < deadline)) || stack_fail "$4: $(grep -E '^(DCGM_FI_DEV_FB_USED|gpu_mig|gpu_sm)' "$2")"
    sleep 0.3
  done
}
wait_metrics "$agent" "$STACK/m.prom" '^DCGM_FI_DEV_FB_USED{gpu="1".*GPU_I_ID="2"' "no MIG instance series on /metrics"

grep -v '^#' "$ROOT/tests/data/dcgm-exporter/golden-mig.prom" | sort >"$STACK/want"
grep '^DCGM_' "$STACK/m.prom" | sort >"$STACK/got"
[[ $(wc -l <"$STACK/want") -gt 40 ]] || stack_fail "golden page too short"
diff "$STACK/want" "$STACK/got" >"$STACK/diff" || stack_fail "dcgm-exporter series changed on the way through: $(cat "$STACK/diff")"

# gpulens' own names: one gpu_mig_info per GPU instance, the instance's memory in bytes.
mig='gpu="1",gpu_uuid="GPU-9e4f2b61-7a0c-4d3e-8b15-6c2a9f0e7d42",gpu_name="NVIDIA A100-SXM4-80GB"'
grep -qF "gpu_mig_info{$mig,gpu_instance_id=\"1\",mig_profile=\"4g.40gb\"} 1" "$STACK/m.prom" ||
  stack_fail "no gpu_mig_info of GPU instance 1: $(grep '^gpu_mig' "$STACK/m.prom")"
grep -qF "gpu_mig_memory_used_bytes{$mig,gpu_instance_id=\"2\",mig_profile=\"3g.40gb\"} $((12 * 1048576))" "$STACK/m.prom" ||
  stack_fail "GPU instance 2's memory: $(grep '^gpu_mig_memory_used' "$STACK/m.prom")"

# The live diagnosis: the GPU instances are entities of their own.
curl -fs "http://127.0.0.1:$agent/api/v1/findings" >"$STACK/findings.json"
python3 - "$STACK/findings.json" <<'PY' || stack_fail "findings do not list the GPU instances: $(cat "$STACK/findings.json")"
import json, sys
gpus = json.load(open(sys.argv[1]))["hosts"][0]["gpus"]
names = sorted(str(g.get("gpu")) for g in gpus)
sys.exit(0 if "1/gi1" in names and "1/gi2" in names and "0" in names else 1)
PY

# --- beside NVML ------------------------------------------------------------
files2=$(free_port)
cat >"$STACK/nvml.txt" <<'EOT'
driver 550.144.03
gpu 0 name="NVIDIA A100-SXM4-80GB" uuid=GPU-aaaa gpm=off
gpu 1 name="NVIDIA A100-SXM4-80GB" uuid=GPU-bbbb gpm=off
mig 1 mode=on
instance 1 gi=1 ci=0 profile=3g.40gb uuid=MIG-3g mem=42949672960 used=1048576
instance 1 gi=5 ci=0 profile=2g.20gb uuid=MIG-2g mem=21474836480 used=2097152
EOT
head='pci_bus_id="00000000:07:00.0",device="nvidia0",modelName="NVIDIA A100-SXM4-80GB",Hostname="n1"'
mkdir -p "$STACK/pages"
cat >"$STACK/pages/dcgm" <<EOT
DCGM_FI_PROF_SM_OCCUPANCY{gpu="0",UUID="GPU-aaaa",$head,container="trainer",namespace="ml",pod="train-0"} 0.250000
DCGM_FI_DEV_FB_USED{gpu="0",UUID="GPU-aaaa",$head,container="trainer",namespace="ml",pod="train-0"} 77777
DCGM_FI_PROF_SM_ACTIVE{gpu="1",UUID="GPU-bbbb",$head,GPU_I_PROFILE="3g.40gb",GPU_I_ID="1",container="server",namespace="serve",pod="vllm-0"} 0.625000
DCGM_FI_DEV_FB_USED{gpu="1",UUID="GPU-bbbb",$head,GPU_I_PROFILE="3g.40gb",GPU_I_ID="1",container="server",namespace="serve",pod="vllm-0"} 5
DCGM_FI_PROF_SM_ACTIVE{gpu="1",UUID="GPU-bbbb",$head,GPU_I_PROFILE="2g.20gb",GPU_I_ID="5"} 0.125000
EOT
python3 -m http.server --bind 127.0.0.1 --directory "$STACK/pages" "$files2" >"$STACK/files2.log" 2>&1 &
STACK_PIDS+=($!)
wait_http "http://127.0.0.1:$files2/dcgm" 20
agent2=$(free_port)
GPULENS_FAKE_NVML_SCRIPT=$STACK/nvml.txt start_agent nvml "$agent2" --source nvml,scrape --nvml-library "$FAKE_NVML" \
  --scrape "http://127.0.0.1:$files2/dcgm" --dcgm-names --interval 1s
wait_metrics "$agent2" "$STACK/m2.prom" '^gpu_mig_sm_active_ratio.*gpu_instance_id="5"' "no scraped MIG SM active beside NVML"
g0='gpu="0",gpu_uuid="GPU-aaaa",gpu_name="NVIDIA A100-SXM4-80GB"'
g1='gpu="1",gpu_uuid="GPU-bbbb",gpu_name="NVIDIA A100-SXM4-80GB"'
grep -qF "gpu_sm_occupancy_ratio{$g0} 0.25" "$STACK/m2.prom" || stack_fail "GPU 0's occupancy not filled from DCGM"
grep -qF "gpu_mig_sm_active_ratio{$g1,compute_instance_id=\"0\",gpu_instance_id=\"1\",mig_profile=\"3g.40gb\",mig_uuid=\"MIG-3g\"} 0.625" "$STACK/m2.prom" ||
  stack_fail "MIG instance 1's SM active not on NVML's series: $(grep '^gpu_mig_sm_active' "$STACK/m2.prom")"
[[ $(grep -c '^gpu_mig_info{' "$STACK/m2.prom") == 2 ]] || stack_fail "the scrape added MIG instances: $(grep '^gpu_mig_info' "$STACK/m2.prom")"
grep -qF "gpu_mig_memory_used_bytes{$g1,compute_instance_id=\"0\",gpu_instance_id=\"1\",mig_profile=\"3g.40gb\",mig_uuid=\"MIG-3g\"} 1048576" "$STACK/m2.prom" ||
  stack_fail "NVML's instance memory did not win: $(grep '^gpu_mig_memory_used' "$STACK/m2.prom")"
grep -q "^gpu_memory_used_bytes{$g0} $((77777 * 1048576))\$" "$STACK/m2.prom" && stack_fail "dcgm-exporter's FB_USED won over NVML's"
grep -q '^DCGM_FI_PROF_SM_OCCUPANCY{gpu="0",UUID="GPU-aaaa",.*,container="trainer",namespace="ml",pod="train-0"} 0.250000$' "$STACK/m2.prom" ||
  stack_fail "GPU 0 lacks dcgm-exporter's pod: $(grep '^DCGM_FI_PROF_SM_OCCUPANCY' "$STACK/m2.prom")"
grep -q '^DCGM_FI_DEV_FB_USED{gpu="1",UUID="GPU-bbbb",.*GPU_I_ID="1",.*pod="vllm-0"} 1$' "$STACK/m2.prom" ||
  stack_fail "MIG instance 1 lacks its pod or NVML's memory: $(grep '^DCGM_FI_DEV_FB_USED' "$STACK/m2.prom")"
grep '^DCGM_FI_DEV_FB_USED{gpu="1",.*GPU_I_ID="5"' "$STACK/m2.prom" | grep 'pod=' >/dev/null && stack_fail "instance 5 got a pod"
echo "scrape_mig: ok"
