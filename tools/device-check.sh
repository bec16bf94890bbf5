#!/usr/bin/env bash
# device-check.sh: checks the NVML source on a real NVIDIA GPU, in under 8 minutes.
#
# Builds the NVML probe (gpulens-nvml-probe) and the CUDA load generator
# tools/gpuload, then for each load mode runs gpuload on GPU $GPU, samples
# the probe while it runs, and checks that the signal the mode must move
# moved; compares the probe with nvidia-smi --query-gpu; and prints what one
# full collection costs. Exit 0 when every check passes, 1 otherwise.
#
#   tools/device-check.sh                 # GPU 0, build in build-device-check/
#   GPU=1 BUILD=/tmp/b tools/device-check.sh
#   PROBE=bin/gpulens-nvml-probe LOAD=bin/gpuload tools/device-check.sh   # prebuilt
set -uo pipefail
cd "$(dirname "$0")/.."
GPU=${GPU:-0}
BUILD=${BUILD:-build-device-check}
OUT=${OUT:-$BUILD/results}
SECONDS_PER_MODE=${SECONDS_PER_MODE:-14}
mkdir -p "$OUT"

command -v nvidia-smi >/dev/null || { echo "device-check: nvidia-smi not found: no NVIDIA driver here"; exit 1; }
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
[ -x "$NVCC" ] || { echo "device-check: nvcc not found (set PATH or NVCC)"; exit 1; }

echo "== build"
# PROBE and LOAD may name prebuilt binaries (a machine without the build dependencies).
if [ -n "${PROBE:-}" ] && [ -x "${PROBE:-}" ] && [ -n "${LOAD:-}" ] && [ -x "${LOAD:-}" ]; then
  echo "device-check: using prebuilt $PROBE and $LOAD"
else
PROBE=$BUILD/src/sources/nvml/gpulens-nvml-probe
if ! { cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DGPULENS_BUILD_BENCH=OFF >"$OUT/cmake.log" 2>&1 &&
       cmake --build "$BUILD" --target gpulens-nvml-probe -j"$(nproc)" >"$OUT/build.log" 2>&1; }; then
  # The probe needs only the model and the NVML source: build it directly.
  echo "device-check: cmake build failed (see $OUT/build.log); compiling the probe directly"
  PROBE=$BUILD/gpulens-nvml-probe
  g++ -O2 -std=c++20 -Isrc -o "$PROBE" $(ls src/sources/nvml/*.cpp | grep -v _test.cpp) \
      $(ls src/model/*.cpp | grep -v _test.cpp) -lsimdjson -ldl -lpthread >"$OUT/direct-build.log" 2>&1 \
    || { tail -20 "$OUT/direct-build.log"; exit 1; }
fi
make -s -C tools/gpuload NVCC="$NVCC" OUT="$PWD/$BUILD/gpuload" ARCH="-arch=native" >"$OUT/gpuload-build.log" 2>&1 \
  || make -s -C tools/gpuload NVCC="$NVCC" OUT="$PWD/$BUILD/gpuload" >>"$OUT/gpuload-build.log" 2>&1 \
  || { tail -20 "$OUT/gpuload-build.log"; exit 1; }
LOAD=$BUILD/gpuload
fi
nvidia-smi -i "$GPU" --query-gpu=name,driver_version,pcie.link.gen.max,pcie.link.width.max --format=csv,noheader | tee "$OUT/gpu.txt"

# run_mode MODE: gpuload for SECONDS_PER_MODE; probe samples (0.5 s) in the middle; nvidia-smi alongside.
run_mode() {
  local mode=$1
  echo "== $mode"
  "$LOAD" "$mode" "$SECONDS_PER_MODE" "$GPU" >"$OUT/$mode.load" 2>&1 &
  local pid=$!
  sleep 4
  nvidia-smi -i "$GPU" --query-gpu=utilization.gpu,memory.used,power.draw,temperature.gpu,clocks.sm,pcie.link.gen.current \
    --format=csv,noheader,nounits -lms 500 >"$OUT/$mode.smi" 2>&1 &
  local smi=$!
  "$PROBE" 6 500 >"$OUT/$mode.probe" 2>"$OUT/$mode.probe.err"
  kill "$smi" 2>/dev/null
  wait "$pid"
  cat "$OUT/$mode.load"
}

for m in idle memcpy h2d d2h tiny gemm; do run_mode "$m"; done

echo "== checks"
python3 - "$OUT" "$GPU" <<'PY'
import re, statistics, sys
out, gpu = sys.argv[1], sys.argv[2]
line = re.compile(r'^(\w+)\{gpu="(-?\d+)"(?:,(.*))?\} (\S+)$')
def probe(mode):
    rows, costs, cur = [], [], {}
    for l in open(f"{out}/{mode}.probe"):
        if l.startswith("# collection_us"):
            costs.append(int(l.split()[2])); rows.append(cur); cur = {}
            continue
        m = line.match(l.strip())
        if m and m.group(2) == gpu:
            cur[m.group(1) + ("{" + m.group(3) + "}" if m.group(3) else "")] = float(m.group(4))
    return rows[1:], costs[1:]  # the first collection primes GPM
def med(rows, key, missing=None):
    v = [r[key] for r in rows if key in r]
    return statistics.median(v) if v else missing
def smi(mode):
    v = []
    for l in open(f"{out}/{mode}.smi"):
        p = [x.strip() for x in l.split(",")]
        try: v.append([float(x) for x in p])
        except ValueError: pass
    return [statistics.median(c) for c in zip(*v)] if v else None
fails = 0
def check(name, ok, detail):
    global fails
    print(f"{'PASS' if ok else 'FAIL'}  {name}: {detail}")
    fails += 0 if ok else 1
r = {m: probe(m) for m in ["idle", "memcpy", "h2d", "d2h", "tiny", "gemm"]}
gen = med(r["h2d"][0], "gpu_pcie_link_generation_max") or 0
v = med(r["memcpy"][0], "gpu_mem_bandwidth_util_ratio")
check("memcpy -> DRAM bandwidth utilisation > 0.7", v is not None and v > 0.7, v)
v = med(r["h2d"][0], "gpu_pcie_rx_bytes_per_second")
need = 40e9 if gen >= 5 else 20e9 if gen == 4 else 8e9
check(f"h2d -> PCIe RX > {need/1e9:.0f} GB/s (Gen{gen:.0f})", v is not None and v > need, v)
v = med(r["d2h"][0], "gpu_pcie_tx_bytes_per_second")
check(f"d2h -> PCIe TX > {need/1e9:.0f} GB/s", v is not None and v > need, v)
u, s = med(r["tiny"][0], "gpu_utilization_ratio"), med(r["tiny"][0], "gpu_sm_active_ratio")
check("tiny kernels -> GPU util > 0.8 with SM active < 0.2", u is not None and s is not None and u > 0.8 and s < 0.2, (u, s))
v = med(r["gemm"][0], "gpu_tensor_core_util_ratio")
check("gemm -> tensor activity > 0.3", v is not None and v > 0.3, v)
v = med(r["idle"][0], "gpu_utilization_ratio")
check("idle -> GPU util < 0.05", v is not None and v < 0.05, v)
procs = [k for k in r["idle"][0][-1] if k.startswith("gpu_process_memory_used_bytes")] if r["idle"][0] else []
check("idle -> gpuload listed as a GPU process", len(procs) > 0, procs[:2])
# Agreement with nvidia-smi (medians over the same seconds).
for mode in ["idle", "memcpy", "gemm"]:
    sm = smi(mode)
    if not sm:
        check(f"{mode}: nvidia-smi readings", False, "none"); continue
    util, mem, power, temp, clock = sm[0], sm[1], sm[2], sm[3], sm[4]
    rows = r[mode][0]
    pairs = [("util (pct points, +-15)", med(rows, "gpu_utilization_ratio", -1) * 100, util, 15),
             ("memory used (MiB, +-256)", med(rows, "gpu_memory_used_bytes", -1) / 2**20, mem, 256),
             ("power (W, +-10%)", med(rows, "gpu_power_watts", -1), power, 0.10 * power + 5),
             ("temperature (C, +-3)", med(rows, "gpu_temperature_celsius", -1), temp, 3),
             ("SM clock (MHz, +-5%)", med(rows, "gpu_sm_clock_hertz", -1) / 1e6, clock, 0.05 * clock + 15)]
    for name, ours, theirs, tol in pairs:
        check(f"{mode}: {name} vs nvidia-smi", abs(ours - theirs) <= tol, f"gpulens {ours:.1f} nvidia-smi {theirs:.1f}")
costs = sum((r[m][1] for m in r), [])
if costs:
    costs.sort()
    print(f"INFO  one full collection of all GPUs: median {costs[len(costs)//2]} us, max {costs[-1]} us ({len(costs)} collections)")
for m in r:
    for l in open(f"{out}/{m}.probe"):
        if l.startswith("# notice"): print("NOTICE", l[9:].strip())
sys.exit(1 if fails else 0)
PY
