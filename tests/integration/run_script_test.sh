#!/usr/bin/env bash
# The README's first command, as a user types it: scripts/run.sh from the
# repository root. On a machine without an NVIDIA driver it must say so,
# ask for the simulator, and serve /metrics with gpulens_simulated 1; with a
# driver it serves the real GPUs (gpulens_simulated 0).
#
# Run by scripts/test.sh after the release suite, not by ctest: run.sh
# reconfigures and builds build/release, which must not happen while other
# tests use that build.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
source "$root/tests/integration/lib/stack.sh"
stack_init curl
port=$(free_port)
"$root/scripts/run.sh" --listen "127.0.0.1:$port" >"$STACK/run.log" 2>&1 &
STACK_PIDS+=($!)
wait_http "http://127.0.0.1:$port/metrics" 300
metrics=$(curl -fs "http://127.0.0.1:$port/metrics")
if "$root/build/release/gpulens" version | grep '^nvml: loads ' >/dev/null; then
  ! grep -q '^gpulens_simulated\({[^}]*}\)\? 1$' <<<"$metrics" || stack_fail "a driver is present but the data is marked simulated"
else
  grep -q 'no NVIDIA driver found' "$STACK/run.log" || stack_fail "run.sh did not say it runs the simulator"
  grep -q '^gpulens_simulated\({[^}]*}\)\? 1$' <<<"$metrics" || stack_fail "simulator data is not marked gpulens_simulated 1"
fi
grep -q '^gpu_sm_active_ratio{' <<<"$metrics" || stack_fail "no GPU series served"
echo "scripts/run.sh serves /metrics: ok"
