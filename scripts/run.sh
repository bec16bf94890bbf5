#!/usr/bin/env bash
# Builds gpulens and runs the agent on http://127.0.0.1:9400/metrics.
# On a machine with an NVIDIA driver it reads the real GPUs; without one it
# asks for the simulator (--source sim) and says so. Extra arguments go to
# `gpulens serve` (a --source of your own wins).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
cmake --preset release >/dev/null
cmake --build --preset release --target gpulens
source_args=()
if [[ " $* " != *" --source"* ]] && ! build/release/gpulens version 2>/dev/null | grep '^nvml: loads ' >/dev/null; then
  echo "run.sh: no NVIDIA driver found (libnvidia-ml.so.1 does not load): running the simulator (--source sim)" >&2
  source_args=(--source sim)
fi
exec build/release/gpulens serve "${source_args[@]}" "$@"
