#!/usr/bin/env bash
# Start-up of the agent inside its container image: exec of the image's
# entrypoint in its own root (chroot, new mount and PID namespaces, as user
# 65532) to the first /metrics holding GPU series, N runs, simulator.
#
#   bench/image_startup.sh IMAGE_ROOTFS [RUNS]     # IMAGE_ROOTFS: build/image/rootfs of scripts/image.sh
#
# Run as root (or prefix: unshare --user --map-root-user, and drop --userspec).
set -euo pipefail
rootfs=$1
runs=${2:-5}
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
for i in $(seq "$runs"); do
  t0=$(date +%s%N)
  unshare --mount --pid --fork --kill-child --mount-proc="$rootfs/proc" \
    env -i GPULENS_SCENARIOS=/usr/share/gpulens/scenarios "$(command -v chroot)" --userspec=65532:65532 "$rootfs" \
    /usr/bin/gpulens serve --source sim --listen "127.0.0.1:$port" >/dev/null 2>&1 &
  pid=$!
  until curl -sf "http://127.0.0.1:$port/metrics" 2>/dev/null | grep '^gpu_up{' >/dev/null; do sleep 0.005; done
  echo "run $i: $((($(date +%s%N) - t0) / 1000000)) ms to the first /metrics with GPUs"
  pkill -TERM -P "$pid"; wait "$pid" 2>/dev/null || true   # unshare --fork ignores SIGTERM itself
done
