#!/usr/bin/env bash
# `gpulens calibrate` end to end on the stand-in libcuda.so.1 and
# libnvidia-ml.so.1: the sweep's peak in the file, the agent dividing PCIe
# throughput by it (basis="calibrated"), --check passing and then naming a
# link that lost bandwidth (exit 3), a busy GPU refused or --force marked,
# and bad input. What it cannot show: real copy engines, real timings.
set -euo pipefail
GPULENS=$1 FAKE_CUDA=$2 FAKE_NVML=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
cd "$work"
uuid=GPU-604ac76c-d9cf-fef3-62e9-d92044ab6e52
cat > nvml.txt <<EOT
gpu 0 name="NVIDIA H100 80GB HBM3" uuid=$uuid pci=00000000:18:00.0 gpm=off
value 0 pcie_rx_kbs 26855468
EOT
cat > cuda.txt <<EOT
device 0 uuid=$uuid pci=0000:18:00.0
bandwidth 0 h2d 1048576=2e10 4194304=5.5e10
bandwidth 0 d2h 4194304=5.2e10
jitter 0 h2d 1 0.5 1 1 1.1
EOT
export GPULENS_FAKE_NVML_SCRIPT=$work/nvml.txt GPULENS_FAKE_CUDA_SCRIPT=$work/cuda.txt
libs=(--cuda-library "$FAKE_CUDA" --nvml-library "$FAKE_NVML")

# --- calibrate: table and file ---------------------------------------------
"$GPULENS" calibrate "${libs[@]}" --sizes 1,4 --copies 1 -o cal.json > out.txt 2> err.txt || fail "calibrate: $(cat err.txt)"
grep -q '^0 .*host->device .* 55.0 GB/s    63.0 GB/s   0.87$' out.txt || fail "table: $(cat out.txt)"
[[ ! -s err.txt ]] || fail "progress lines without a terminal: $(cat err.txt)"
python3 - "$uuid" <<'EOT' || fail "file: $(cat cal.json)"
import json, sys
d = json.load(open("cal.json"))
g = d["gpus"][0]
assert g["uuid"] == sys.argv[1] and g["link_gen"] == 5 and g["link_width"] == 16
assert abs(g["pcie_rx_bytes_per_second"] - 5.5e10) < 1e6, g   # median, not the 2x outlier
assert abs(g["pcie_tx_bytes_per_second"] - 5.2e10) < 1e6
assert [p["bytes"] for p in g["sweep"]] == [1048576, 4194304]
assert g["under_load"] is False and d["tool"] == "gpulens calibrate" and g["date"] == d["date"]
EOT

# --- the agent reads it: utilisation against the calibrated peak ------------
printf 'source:\n  nvml:\n    calibration: %s\n' "$work/cal.json" > cfg.yaml
"$GPULENS" snapshot --config cfg.yaml --source nvml --nvml-library "$FAKE_NVML" --format json > snap.json
python3 - <<'EOT' || fail "agent: $(cat snap.json)"
import json
f = json.load(open("snap.json"))["gpus"][0]["fields"]
peaks = {k: v for k, v in f.items() if k.startswith("gpu_pcie_peak_bytes_per_second")}
assert peaks and all('basis="calibrated"' in k for k in peaks), peaks
assert abs(f["gpu_pcie_rx_bandwidth_util_ratio"] - 0.5) < 1e-3, f["gpu_pcie_rx_bandwidth_util_ratio"]
EOT

# --- --check: unchanged, then a link at half its bandwidth ------------------
"$GPULENS" calibrate "${libs[@]}" --copies 1 --check cal.json > check.txt || fail "check on an unchanged link: $(cat check.txt)"
sed -i 's/4194304=5.5e10/4194304=2.75e10/' cuda.txt
set +e
"$GPULENS" calibrate "${libs[@]}" --copies 1 --check cal.json > check.txt
rc=$?
set -e
[[ $rc -eq 3 ]] || fail "--check on a slow link exited $rc"
grep -q "^LOST: GPU 0 ($uuid) host->device: 27.5 GB/s now, 55.0 GB/s at calibration (" check.txt \
  || fail "--check output: $(cat check.txt)"
[[ "$(cat cal.json)" == *'"pcie_rx_bytes_per_second":5'* ]] || fail "--check rewrote the file"

# --- a busy GPU: refused, or measured and marked with --force ---------------
echo "process 0 pid=4242 mem=1073741824 sm=37" >> nvml.txt
set +e
"$GPULENS" calibrate "${libs[@]}" --sizes 1 -o busy.json 2> busy.err
rc=$?
set -e
[[ $rc -eq 1 && ! -e busy.json ]] || fail "busy GPU: exit $rc"
grep -q "is in use by pid 4242.*--force" busy.err || fail "busy message: $(cat busy.err)"
"$GPULENS" calibrate "${libs[@]}" --sizes 1 --force -o busy.json > /dev/null 2> busy.err
grep -q "WARNING: GPU 0 .* used by other processes" busy.err || fail "no warning with --force: $(cat busy.err)"
grep -q '"under_load":true' busy.json || fail "--force result not marked"

# --- bad input --------------------------------------------------------------
echo '{"gpus": [{"uuid": "x"}]}' > bad.json
set +e
"$GPULENS" calibrate "${libs[@]}" --check bad.json 2> bad.err; rc=$?
"$GPULENS" calibrate "${libs[@]}" --sizes 0 2> /dev/null; rc2=$?
GPULENS_FAKE_CUDA_SCRIPT=/nonexistent "$GPULENS" calibrate "${libs[@]}" --force 2> nodev.err; rc3=$?
set -e
[[ $rc -eq 2 ]] && grep -q "bad.json: gpus\[0\]: needs pcie_rx" bad.err || fail "bad file: $rc $(cat bad.err)"
[[ $rc2 -eq 2 ]] || fail "--sizes 0 exited $rc2"
[[ $rc3 -eq 1 ]] && grep -q "CUDA_ERROR_NO_DEVICE" nodev.err || fail "no device: $rc3 $(cat nodev.err)"
echo PASS
