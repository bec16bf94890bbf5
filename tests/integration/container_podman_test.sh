#!/usr/bin/env bash
# The image in a real container runtime: scripts/image.sh --archive writes
# the image as one tar file; podman (runc, the vfs storage driver, cgroupfs,
# a storage root of its own in the test's directory, never the user's store)
# loads it and runs it read-only, as the image's non-root user, with every
# capability dropped, on the host network at a free port, against the
# simulator: /metrics is served, the process runs as uid 65532 with no
# capability (effective or bounding), no_new_privs, on a read-only root; `podman stop` sends SIGTERM and the container exits 0.
#
#   container_podman_test.sh GPULENS BUILD_DIR
#
# Exits 77 (skipped) without podman, runc, debootstrap, umoci or curl.
# The explicit --ulimit values: runc sets the container's limits, podman's
# defaults (nofile 1048576, nproc 4194304) are above the hard limits of a
# machine whose root lacks CAP_SYS_RESOURCE (as in a CI VM), where runc fails
# with "error setting rlimits for ready process: operation not permitted".
set -euo pipefail
gpulens=$1
build=$2
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
for t in podman runc debootstrap umoci curl; do
  command -v $t >/dev/null || { echo "SKIP: $t not installed"; exit 77; }
done
[[ $(id -u) == 0 ]] || { echo "SKIP: needs root (podman with runc and the vfs driver, rootful)"; exit 77; }
fail() { echo "FAIL: $*" >&2; [[ -n ${name:-} ]] && pd logs "$name" 2>&1 | tail -20 >&2; exit 1; }

tmp=$(mktemp -d)
mkdir -p "$tmp/tmp"
pd() {
  TMPDIR=$tmp/tmp podman --root "$tmp/store" --runroot "$tmp/run" --storage-driver vfs --runtime runc \
    --cgroup-manager cgroupfs --events-backend file "$@"
}
name=""
cleanup() {
  [[ -n $name ]] && pd rm -f -t 0 "$name" >/dev/null 2>&1
  rm -rf "$tmp"
}
trap cleanup EXIT

start=$(date +%s)
"$root/scripts/image.sh" --binary "$gpulens" --out "$build/image" --archive "$tmp/gpulens.tar" ||
  fail "scripts/image.sh --archive failed"
echo "image built in $(($(date +%s) - start)) s"
tag=$("$gpulens" --version | awk 'NR==1 {print $2}')
tar tf "$tmp/gpulens.tar" | grep -x manifest.json >/dev/null || fail "the archive has no manifest.json for docker load"

pd load -i "$tmp/gpulens.tar" >"$tmp/load.out" 2>&1 || fail "podman load: $(cat "$tmp/load.out")"
grep -q "Loaded image: localhost/gpulens:$tag" "$tmp/load.out" || fail "podman load named it otherwise: $(cat "$tmp/load.out")"

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
name=gpulens-test-$$
pd run -d --name "$name" --network host --read-only --user 65532:65532 --cap-drop ALL \
  --security-opt no-new-privileges --ulimit nofile=1024:1024 --ulimit nproc=1024:1024 \
  "localhost/gpulens:$tag" --source sim --listen "127.0.0.1:$port" >/dev/null 2>"$tmp/run.err" ||
  fail "podman run: $(cat "$tmp/run.err")"
# Until the first sample is in /metrics.
for _ in $(seq 100); do
  curl -fs -o "$tmp/metrics" "http://127.0.0.1:$port/metrics" && grep -q '^gpu_temperature_celsius{' "$tmp/metrics" && break
  [[ $(pd inspect "$name" --format '{{.State.Running}}') == true ]] || fail "the container stopped"
  sleep 0.2
done
grep -q '^gpu_temperature_celsius{' "$tmp/metrics" || fail "no GPU metrics from the container"
grep -q '^gpu_info{.*driver="simulated"' "$tmp/metrics" || fail "not the simulator's GPUs"

# The process as the kernel sees it: the image's user, no capabilities.
pid=$(pd inspect "$name" --format '{{.State.Pid}}')
[[ $(awk '/^Uid:/ {print $2}' "/proc/$pid/status") == 65532 ]] || fail "the agent does not run as uid 65532"
[[ $(awk '/^CapEff:/ {print $2}' "/proc/$pid/status") == 0000000000000000 ]] || fail "the agent has capabilities"
# --cap-drop ALL: none left to gain either (a non-root user has no effective ones anyway).
[[ $(awk '/^CapBnd:/ {print $2}' "/proc/$pid/status") == 0000000000000000 ]] || fail "the bounding set is not empty"
[[ $(awk '/^NoNewPrivs:/ {print $2}' "/proc/$pid/status") == 1 ]] || fail "no_new_privs is not set"
if touch "/proc/$pid/root/usr/bin/probe" 2>/dev/null; then fail "the root file system is writable"; fi

# SIGTERM (podman stop, 10 s before SIGKILL): a clean exit, well before the kill.
pd stop -t 10 "$name" >/dev/null || fail "podman stop"
code=$(pd inspect "$name" --format '{{.State.ExitCode}}')
[[ $code == 0 ]] || fail "the container exited $code after SIGTERM, want 0"
# Into a file first: `pd logs | grep -q` under pipefail fails at random when
# grep exits on its match before podman has written the rest (SIGPIPE).
pd logs "$name" >"$tmp/podman-logs.txt" 2>&1 || fail "podman logs failed: $(cat "$tmp/podman-logs.txt")"
grep -q "serving url=http://127.0.0.1:$port/metrics" "$tmp/podman-logs.txt" || fail "the agent's log is not in podman logs"
echo "container in podman: ok ($(($(date +%s) - start)) s)"
