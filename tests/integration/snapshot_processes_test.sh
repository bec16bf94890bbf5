#!/usr/bin/env bash
# `gpulens snapshot` on the stand-in libnvidia-ml.so.1: the host line (host,
# driver, CUDA version, time) and each GPU's processes with pid, user,
# command (read from /proc: the test's own `sleep`), device memory, SM share
# and, on a MIG GPU, the GPU and compute instance; a driver without libcuda
# shows CUDA "-", simulated data no processes; a pod's process from the
# fixture procfs shows namespace/pod/container; `--url` of an agent on
# loopback reads user and command from this host. What it cannot show: a
# real driver's process lists.
set -euo pipefail
GPULENS=$1 FAKE_NVML=$2 ROOT=$3
work=$(mktemp -d)
sleep 300 &
sleeper=$!
agent=
trap 'kill $sleeper $agent 2>/dev/null; rm -rf "$work"' EXIT
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
head -1 out.txt | grep -E "^host $(hostname)   driver 550\.54\.15   CUDA 12\.4   [0-9]{4}-[0-9]{2}-[0-9]{2} [0-9:]{8} UTC$" >/dev/null ||
  fail "host line: $(head -1 out.txt)"
user=$(id -un)
grep -q '^GPU  GI  CI  PID      USER  *MEMORY   SM  NAMESPACE/POD/CONTAINER  *COMMAND$' out.txt || fail "process header: $(cat out.txt)"
grep -Eq "^0    -   -   $sleeper +$user +1\.0 GiB  37%  - +sleep 300$" out.txt || fail "process on GPU 0: $(cat out.txt)"
grep -Eq "^0    -   -   4194303 +- +5 MiB   3%  - +-$" out.txt || fail "a process gone from /proc: $(cat out.txt)"
grep -Eq "^1    5   0   $sleeper +$user +2\.0 GiB    -  - +sleep 300$" out.txt || fail "MIG process: $(cat out.txt)"
[[ $(grep -c "sleep 300" out.txt) -eq 2 ]] || fail "each process once per GPU: $(cat out.txt)"

# The same through a running agent on loopback: user and command still read here.
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$GPULENS" serve --listen "127.0.0.1:$port" --source nvml --nvml-library "$FAKE_NVML" > agent.log 2>&1 &
agent=$!
for _ in $(seq 100); do curl -fs -o /dev/null --max-time 2 "http://127.0.0.1:$port/healthz" && break; sleep 0.2; done
"$GPULENS" snapshot --url "127.0.0.1:$port" > url.txt 2> err.txt || fail "snapshot --url: $(cat err.txt) $(tail agent.log)"
grep -Eq "^0    -   -   $sleeper +$user +1\.0 GiB  37%  - +sleep 300$" url.txt || fail "--url process: $(cat url.txt)"
head -1 url.txt | grep "^host $(hostname)   driver 550\.54\.15   CUDA 12\.4   " >/dev/null || fail "--url host line: $(head -1 url.txt)"
kill $agent
wait $agent 2>/dev/null || true
agent=

# A pod's process (fixture procfs and kubelet): namespace/pod/container; no
# Uid or cmdline in the fixture, so user and command are "-".
cat > pod.txt <<EOT
gpu 0 name="NVIDIA H100 80GB HBM3" uuid=GPU-aaaa gpm=off
process 0 pid=4242 mem=1073741824 sm=37
EOT
printf 'source:\n  nvml:\n    proc_root: %s\n    kubelet_root: %s\n' "$ROOT/tests/data/nvml/proc" \
  "$ROOT/tests/data/nvml/kubelet" > pod.yaml
GPULENS_FAKE_NVML_SCRIPT=$work/pod.txt "$GPULENS" snapshot --config pod.yaml --source nvml --nvml-library "$FAKE_NVML" \
  > pod.out 2> err.txt || fail "snapshot (pod): $(cat err.txt)"
grep -q '^GPU  PID      USER' pod.out || fail "no MIG columns without MIG: $(cat pod.out)"
grep -Eq '^0    4242     - +1\.0 GiB  37%  ml-team/trainer-0/trainer +-$' pod.out || fail "pod process: $(cat pod.out)"

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
head -1 out.txt | grep "   CUDA -   " >/dev/null || fail "CUDA without libcuda: $(head -1 out.txt)"

# Simulated GPUs have no processes (and no pid of this host is read).
"$GPULENS" snapshot --source sim > sim.txt 2> /dev/null
grep -q '^PROCESSES: the driver lists none on any GPU$' sim.txt || fail "sim: $(cat sim.txt)"
head -1 sim.txt | grep "^host .*   driver simulated   CUDA -   " >/dev/null || fail "sim host line: $(head -1 sim.txt)"
echo "snapshot processes and host line OK"
