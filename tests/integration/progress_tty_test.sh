#!/usr/bin/env bash
# Progress lines on long work, on a terminal only: `calibrate` (a line per
# GPU measured, on the stand-in libcuda.so.1 and libnvidia-ml.so.1), `trace`
# on a trace over 32 MiB (inflating/parsing), `diagnose --prometheus` (hosts
# diagnosed of the fleet, per batch; against the loopback query-API stand-in).
# Each runs in a tmux pane (a real terminal) with stdout to a file, and again
# with stderr to a file: the line must be on the terminal and absent from
# the file.
#   progress_tty_test.sh GPULENS SOURCE_DIR FAKE_CUDA FAKE_NVML
set -euo pipefail
GPULENS=$(realpath "$1") SRC=$(realpath "$2") FAKE_CUDA=$(realpath "$3") FAKE_NVML=$(realpath "$4")
source "$(dirname "$0")/lib/stack.sh"
stack_init tmux python3
sock=$STACK/tmux.sock
tm() { tmux -S "$sock" -f /dev/null "$@"; }
trap 'tm kill-server 2>/dev/null || true; stack_cleanup' EXIT
cd "$STACK"

# on_tty NAME PATTERN COMMAND...: runs COMMAND in a pane; PATTERN must appear.
on_tty() {
  local name=$1 pattern=$2; shift 2
  printf '%q ' "$@" > "$name.cmd"
  tm new-session -d -s "$name" -x 200 -y 30 "cd $STACK && bash -c \"\$(cat $name.cmd) > $name.out\"; echo $name-done; sleep 30"
  local deadline=$((SECONDS + 60))
  until tm capture-pane -p -t "$name" | grep "^$name-done" >/dev/null; do
    ((SECONDS < deadline)) || stack_fail "$name did not finish on the terminal"
    sleep 0.2
  done
  tm capture-pane -p -t "$name" > "$name.screen"
  grep -Eq -- "$pattern" "$name.screen" || { cat "$name.screen" >&2; stack_fail "$name: no progress line /$pattern/ on the terminal"; }
}
# not_piped NAME PATTERN COMMAND...: stderr to a file; PATTERN must not be in it.
not_piped() {
  local name=$1 pattern=$2; shift 2
  "$@" > "$name.piped.out" 2> "$name.piped.err" || true
  if grep -Eq -- "$pattern" "$name.piped.err"; then stack_fail "$name: progress line written to a file: $(cat "$name.piped.err")"; fi
}

# --- calibrate -----------------------------------------------------------
uuid=GPU-604ac76c-d9cf-fef3-62e9-d92044ab6e52
printf 'gpu 0 name="NVIDIA H100 80GB HBM3" uuid=%s pci=00000000:18:00.0 gpm=off\n' "$uuid" > nvml.txt
printf 'device 0 uuid=%s pci=0000:18:00.0\nbandwidth 0 h2d 4194304=5.5e10\nbandwidth 0 d2h 4194304=5.2e10\n' "$uuid" > cuda.txt
export GPULENS_FAKE_NVML_SCRIPT=$STACK/nvml.txt GPULENS_FAKE_CUDA_SCRIPT=$STACK/cuda.txt
cal=("$GPULENS" calibrate --cuda-library "$FAKE_CUDA" --nvml-library "$FAKE_NVML" --sizes 4 --copies 1 -o cal.json)
pat='^gpulens calibrate: GPU 0 .*host->device 55.0 GB/s, device->host 52.0 GB/s'
on_tty calibrate "$pat" "${cal[@]}"
not_piped calibrate "host->device" "${cal[@]}"

# --- trace over 32 MiB ---------------------------------------------------
python3 - > big.json <<'PY'
import json, sys
ev = [{"ph": "X", "cat": "kernel", "name": "gemm_kernel_%d" % (i % 50), "pid": 0, "tid": 7,
       "ts": 1000 + i * 10, "dur": 8, "args": {"device": 0, "stream": 7, "correlation": i,
       "padding": "x" * 1100}} for i in range(30000)]
json.dump({"traceEvents": ev}, sys.stdout)
PY
(( $(stat -c %s big.json) > 32 * 1024 * 1024 )) || stack_fail "the generated trace is under 32 MiB"
on_tty trace '^big.json: parsing [0-9.]+ MiB of JSON' "$GPULENS" trace big.json
grep -q 'compute' trace.out || stack_fail "trace on a terminal: no report on stdout"
not_piped trace "parsing" "$GPULENS" trace big.json

# --- diagnose --prometheus -----------------------------------------------
python3 "$SRC/tests/integration/lib/fake_query_api.py" matrix > fake.port 2> fake.log &
STACK_PIDS+=($!)
for _ in $(seq 400); do [[ -s fake.port ]] && break; sleep 0.05; done
port=$(cat fake.port)
[[ -n $port ]] || stack_fail "the query-API stand-in did not start"
dia=("$GPULENS" diagnose --prometheus "http://127.0.0.1:$port" --range 30m --fail-on never)
on_tty diagnose '^gpulens diagnose: 1 of 1 hosts diagnosed, [0-9]+ queries, [0-9.]+ MiB received' "${dia[@]}"
not_piped diagnose "hosts diagnosed" "${dia[@]}"
echo "PASS: progress on a terminal for calibrate, trace and diagnose --prometheus; none into files"
