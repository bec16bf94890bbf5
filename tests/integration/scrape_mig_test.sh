#!/usr/bin/env bash
# A dcgm-exporter page of a MIG node (tests/data/dcgm-exporter/golden-mig.prom:
# a whole A100 and one in MIG mode with two GPU instances, pods on the whole
# GPU and on one instance), served from a plain file server on loopback and
# scraped by `gpulens serve --source scrape --dcgm-names`: the agent's
# /metrics gives the same dcgm-exporter series back, labels and values,
# the instances' gpu_mig_* series under gpulens' names, and the live
# diagnosis judges each GPU instance as an entity of its own.
set -euo pipefail
GPULENS=$1 ROOT=$2
source "$ROOT/tests/integration/lib/stack.sh"
stack_init curl python3

files=$(free_port) agent=$(free_port)
python3 -m http.server --bind 127.0.0.1 --directory "$ROOT/tests/data/dcgm-exporter" "$files" \
  >"$STACK/files.log" 2>&1 &
STACK_PIDS+=($!)
wait_http "http://127.0.0.1:$files/golden-mig.prom" 20
NODE_NAME=gpu-node-5 start_agent main "$agent" --source scrape --scrape "http://127.0.0.1:$files/golden-mig.prom" \
  --dcgm-names --interval 1s
metrics() { curl -fs --max-time 5 "http://127.0.0.1:$agent/metrics"; }
deadline=$((SECONDS + 15))
until metrics >"$STACK/m.prom" && grep -q '^DCGM_FI_DEV_FB_USED{gpu="1".*GPU_I_ID="2"' "$STACK/m.prom"; do
  ((SECONDS < deadline)) || stack_fail "no MIG instance series on /metrics: $(grep '^DCGM_FI_DEV_FB_USED' "$STACK/m.prom")"
  sleep 0.3
done

grep -v '^#' "$ROOT/tests/data/dcgm-exporter/golden-mig.prom" | sort >"$STACK/want"
grep '^DCGM_' "$STACK/m.prom" | sort >"$STACK/got"
[[ $(wc -l <"$STACK/want") -gt 40 ]] || stack_fail "golden page too short"
diff "$STACK/want" "$STACK/got" >"$STACK/diff" || stack_fail "dcgm-exporter series changed on the way through: $(cat "$STACK/diff")"

# gpulens' own names: one gpu_mig_info per GPU instance, the instance's memory in bytes.
mig='gpu="1",gpu_uuid="GPU-9e4f2b61-7a0c-4d3e-8b15-6c2a9f0e7d42",gpu_name="NVIDIA A100-SXM4-80GB"'
grep -qF "gpu_mig_info{$mig,mig_profile=\"4g.40gb\",gpu_instance_id=\"1\"} 1" "$STACK/m.prom" ||
  stack_fail "no gpu_mig_info of GPU instance 1: $(grep '^gpu_mig' "$STACK/m.prom")"
grep -qF "gpu_mig_memory_used_bytes{$mig,mig_profile=\"3g.40gb\",gpu_instance_id=\"2\"} $((12 * 1048576))" "$STACK/m.prom" ||
  stack_fail "GPU instance 2's memory: $(grep '^gpu_mig_memory_used' "$STACK/m.prom")"

# The live diagnosis: the GPU instances are entities of their own.
curl -fs "http://127.0.0.1:$agent/api/v1/findings" >"$STACK/findings.json"
python3 - "$STACK/findings.json" <<'PY' || stack_fail "findings do not list the GPU instances: $(cat "$STACK/findings.json")"
import json, sys
gpus = json.load(open(sys.argv[1]))["hosts"][0]["gpus"]
names = sorted(str(g.get("gpu")) for g in gpus)
sys.exit(0 if "1/gi1" in names and "1/gi2" in names and "0" in names else 1)
PY
echo "scrape_mig: ok"
