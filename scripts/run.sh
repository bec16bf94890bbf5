#!/usr/bin/env bash
# Builds gpulens and runs the agent on http://127.0.0.1:9400/metrics.
# On a machine with an NVIDIA driver it reads the real GPUs; without one it
# runs the simulator and says so. Extra arguments go to `gpulens serve`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
cmake --preset release >/dev/null
cmake --build --preset release --target gpulens
exec build/release/gpulens serve "$@"
