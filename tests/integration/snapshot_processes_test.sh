#!/usr/bin/env bash
# `gpulens snapshot` on the stand-in libnvidia-ml.so.1: the host line (host,
# driver, CUDA version, time) and each GPU's processes with pid, user,
# command (read from /proc: the test's own `sleep`), device memory, SM share
# and, on a MIG GPU, the GPU and compute instance; a driver without libcuda
# shows CUDA "-", simulated data no processes. What it cannot show: a real
# driver's process lists.
set -euo pipefail
GPULENS=$1 FAKE_NVML=$2
work=$(mktemp -d)
sleep 300 &
sleeper=$!
trap 'kill $sleeper 2>/dev/null; rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
cd "$work"
cat > nvml.txt <<EOT
driver 550.54.15
gpu 0 name="NVIDIA H100 80GB HBM3" uuid=GPU-aaaa gpm=off
gpu 1 name="NVIDIA H100 80GB HBM3" uuid=GPU-bbbb gpm=off
mig 1 mode=on
instance 1 gi=1 ci=0 profile=3g.40gb uuid=MIG-3g mem=42949672960
instance 1 gi=5 ci=0 profile=2g.20gb uuid=MIG-2g mem=21474836480
process 0 pid=$sleeper mem=1073741824 sm=37
process 0 pid=4194303 mem=5242880 sm=3
process 1 pid=$sleeper mem=2147483648 gi=5 ci=0
EOT
export GPULENS_FAKE_NVML_SCRIPT=$work/nvml.txt
"$GPULENS" snapshot --source nvml --nvml-library "$FAKE_NVML" > out.txt 2> err.txt || fail "snapshot: $(cat err.txt)"
head -1 out.txt | grep -Eq "^host $(hostname)   driver 550\.54\.15   CUDA 12\.4   [0-9]{4}-[0-9]{2}-[0-9]{2} [0-9:]{8} UTC$" ||
  fail "host line: $(head -1 out.txt)"
user=$(id -un)
grep -q '^GPU  GI  CI  PID      USER  *MEMORY   SM  NAMESPACE/POD/CONTAINER  *COMMAND$' out.txt || fail "process header: $(cat out.txt)"
grep -Eq "^0    -   -   $sleeper +$user +1\.0 GiB  37%  - +sleep 300$" out.txt || fail "process on GPU 0: $(cat out.txt)"
grep -Eq "^0    -   -   4194303 +- +5 MiB   3%  - +-$" out.txt || fail "a process gone from /proc: $(cat out.txt)"
grep -Eq "^1    5   0   $sleeper +$user +2\.0 GiB    -  - +sleep 300$" out.txt || fail "MIG process: $(cat out.txt)"
[[ $(grep -c "sleep 300" out.txt) -eq 2 ]] || fail "each process once per GPU: $(cat out.txt)"

# The JSON carries the host object the line is made of.
"$GPULENS" snapshot --source nvml --nvml-library "$FAKE_NVML" --format json > snap.json
python3 - "$(hostname)" <<'EOT' || fail "json: $(cat snap.json)"
import json, sys
d = json.load(open("snap.json"))
assert d["host"] == {"name": sys.argv[1], "driver": "550.54.15", "cuda": "12.4"}, d["host"]
EOT

# No libcuda.so.1 beside the driver: CUDA unknown, not a made-up number.
sed -i '1a cuda 0' nvml.txt
"$GPULENS" snapshot --source nvml --nvml-library "$FAKE_NVML" > out.txt 2> err.txt || fail "snapshot: $(cat err.txt)"
head -1 out.txt | grep -q "   CUDA -   " || fail "CUDA without libcuda: $(head -1 out.txt)"

# Simulated GPUs have no processes (and no pid of this host is read).
"$GPULENS" snapshot --source sim > sim.txt 2> /dev/null
grep -q '^PROCESSES: the driver lists none on any GPU$' sim.txt || fail "sim: $(cat sim.txt)"
head -1 sim.txt | grep -q "^host .*   driver simulated   CUDA -   " || fail "sim host line: $(head -1 sim.txt)"
echo "snapshot processes and host line OK"
