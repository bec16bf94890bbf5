#!/usr/bin/env bash
# The container image, built with no daemon and no registry (scripts/image.sh:
# Debian 12 packages fetched by debootstrap, packed by umoci into an OCI
# layout), then proven: unpacked from the layout, its entrypoint run inside
# its own root (chroot in new mount and PID namespaces; as an unprivileged
# user, in a user namespace) as the image's user against the simulator,
# /metrics and /healthz served; every library the binary needs resolved by
# the image's own loader from the image's files; no shell or package manager;
# its size within 60 MB uncompressed; the Dockerfile agreeing with the
# layout's entrypoint, user and port.
#
#   container_image_test.sh GPULENS BUILD_DIR
#
# The package download is cached in BUILD_DIR/image/cache (keyed by the
# package list). Exits 77 (skipped) without debootstrap, umoci or curl.
set -euo pipefail
gpulens=$1
build=$2
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
for t in debootstrap umoci curl unshare chroot; do
  command -v $t >/dev/null || { echo "SKIP: $t not installed"; exit 77; }
done
py=/usr/bin/python3
fail() { echo "FAIL: $*" >&2; exit 1; }

# Root for dpkg-deb, umoci and chroot: real root, or root of a user namespace.
asroot() { if [[ $(id -u) == 0 ]]; then "$@"; else unshare --user --map-root-user "$@"; fi; }

out=$build/image
start=$(date +%s)
asroot "$root/scripts/image.sh" --binary "$gpulens" --out "$out" || fail "scripts/image.sh failed"
echo "image built in $(($(date +%s) - start)) s"
tag=$("$gpulens" --version | awk 'NR==1 {print $2}')

tmp=$(mktemp -d)
# unshare --fork ignores SIGTERM while it waits: stop the agent it started
# ($agent is the subshell running inroot; its child is unshare, the agent
# unshare's child).
stop_agent() {
  [[ -n ${agent:-} ]] || return 0
  local ns
  for ns in $(pgrep -P "$agent"); do pkill -TERM -P "$ns" 2>/dev/null || true; done
  wait "$agent" 2>/dev/null || true
  agent=""
}
cleanup() {
  stop_agent
  asroot rm -rf "$tmp"
}
trap cleanup EXIT

# Unpack what the layout holds (not the build's root): the image as a runtime sees it.
asroot umoci unpack --image "$out/oci:$tag" "$tmp/bundle" >/dev/null || fail "umoci unpack"
rootfs=$tmp/bundle/rootfs
$py - "$tmp/bundle/config.json" >"$tmp/process" <<'PY' || fail "the image's config"
import json, sys
p = json.load(open(sys.argv[1]))["process"]
assert p["args"][:2] == ["/usr/bin/gpulens", "serve"], p["args"]
assert p["user"]["uid"] == 65532 and p["user"]["gid"] == 65532, p["user"]
print(f'{p["user"]["uid"]}:{p["user"]["gid"]}')
print(" ".join(p["args"][:2]))
for e in p["env"]:
    print(e)
PY
user=$(sed -n 1p "$tmp/process")
entrypoint=$(sed -n 2p "$tmp/process")
mapfile -t env < <(sed -n '3,$p' "$tmp/process")

# Size: the unpacked root, and the compressed layer a registry stores.
size=$(du -sb --apparent-size "$rootfs" | cut -f1)
layer=$($py -c '
import json, sys
d = sys.argv[1]
idx = json.load(open(d + "/index.json"))["manifests"][0]["digest"].split(":")[1]
m = json.load(open(d + "/blobs/sha256/" + idx))
print(sum(l["size"] for l in m["layers"]))' "$out/oci")
echo "image size: $size bytes uncompressed, $layer bytes compressed (one layer)"
((size <= 60000000)) || fail "image is $size bytes uncompressed, over the 60 MB goal"

# Contents: no shell, no package manager; the libraries resolved inside the image.
for f in bin/sh usr/bin/sh bin/bash usr/bin/apt usr/bin/dpkg; do
  [[ -e $rootfs/$f ]] && fail "the image holds /$f"
done
# Run a command inside the image's root in new mount and PID namespaces, as
# the image's user. Not root: a user namespace maps only the caller to root,
# so the command runs as that (unprivileged) caller instead of uid 65532.
inroot() {
  local ns=() as=(--userspec="$user")
  [[ $(id -u) != 0 ]] && ns=(--user --map-root-user) && as=()
  unshare "${ns[@]}" --mount --pid --fork --kill-child --mount-proc="$rootfs/proc" \
    env -i "${env[@]}" "$(command -v chroot)" "${as[@]}" "$rootfs" "$@"
}
inroot /lib64/ld-linux-x86-64.so.2 --list /usr/bin/gpulens >"$tmp/ldd" 2>&1 || fail "the image's loader: $(cat "$tmp/ldd")"
grep -q 'not found' "$tmp/ldd" && fail "libraries missing from the image: $(grep 'not found' "$tmp/ldd")"
[[ $(grep -c '=> /' "$tmp/ldd") -ge 10 ]] || fail "the loader resolved too few libraries: $(cat "$tmp/ldd")"
while read -r lib; do
  pkg=$(dpkg -S "$(readlink -f "$lib")" 2>/dev/null | cut -d: -f1 || true)
  [[ -z $pkg || -f $rootfs/var/lib/dpkg/status.d/$pkg ]] || fail "$lib: package $pkg is not recorded in the image"
done < <(ldd "$gpulens" | awk '/=>/ {print $3}')
inroot /usr/bin/gpulens --version >"$tmp/version" || fail "gpulens --version inside the image"
grep -q "^gpulens $tag" "$tmp/version" || fail "version inside the image: $(cat "$tmp/version")"

# The entrypoint against the simulator: /healthz, then /metrics with real series.
port=$($py -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
# shellcheck disable=SC2086
inroot $entrypoint --source sim --listen "127.0.0.1:$port" >"$tmp/agent.log" 2>&1 &
agent=$!
t0=$(date +%s%N)
for _ in $(seq 200); do
  curl -sf "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && break
  kill -0 "$agent" 2>/dev/null || fail "the agent exited inside the image: $(cat "$tmp/agent.log")"
  sleep 0.05
done
echo "agent ready inside the image after $((($(date +%s%N) - t0) / 1000000)) ms"
for _ in $(seq 100); do  # the first sample follows the listener by up to an interval
  curl -sf "http://127.0.0.1:$port/metrics" >"$tmp/metrics" || fail "no /metrics: $(cat "$tmp/agent.log")"
  grep -q '^gpu_up{' "$tmp/metrics" && break
  sleep 0.05
done
grep -q '^gpulens_simulated{scenario="healthy-training"} 1$' "$tmp/metrics" || fail "/metrics lacks gpulens_simulated 1"
grep -q '^gpu_utilization_ratio{' "$tmp/metrics" || fail "/metrics lacks gpu_utilization_ratio"
[[ $(grep -c '^gpu_up{' "$tmp/metrics") == 8 ]] || fail "/metrics: want 8 simulated GPUs"

stop_agent

# Without --source sim and without a driver, the image's agent refuses to start.
if inroot $entrypoint --listen "127.0.0.1:$port" >"$tmp/nodriver.log" 2>&1; then fail "the image served without a GPU source"; fi
cat "$tmp/nodriver.log"
grep -q 'libnvidia-ml.so.1' "$tmp/nodriver.log" || fail "no reason given without a driver: $(cat "$tmp/nodriver.log")"

# The Dockerfile builds the same root and declares the same entrypoint, user and port.
df=$root/Dockerfile
grep -q 'scripts/image.sh --root-only' "$df" || fail "the Dockerfile does not build its root with scripts/image.sh"
grep -q '^ENTRYPOINT \["/usr/bin/gpulens", "serve"\]$' "$df" || fail "Dockerfile ENTRYPOINT differs"
grep -q '^USER 65532:65532$' "$df" || fail "Dockerfile USER differs"
grep -q '^EXPOSE 9400/tcp$' "$df" || fail "Dockerfile EXPOSE differs"
grep -q '^FROM debian:12 AS build$' "$df" || fail "Dockerfile does not build on Debian 12"
echo "container image: ok"
