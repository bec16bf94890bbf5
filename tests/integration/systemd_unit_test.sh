#!/usr/bin/env bash
# The systemd unit passes `systemd-analyze verify` (with ExecStart pointed at
# the built binary), and its config file passes `gpulens check-config`.
#
#   systemd_unit_test.sh GPULENS
#
# Exits 77 (skipped) without systemd-analyze.
set -euo pipefail
gpulens=$1
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
command -v systemd-analyze >/dev/null || { echo "SKIP: systemd-analyze not installed"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

sed "s|/usr/local/bin/gpulens|$gpulens|" "$root/deploy/systemd/gpulens.service" >"$tmp/gpulens.service"
timeout 60 systemd-analyze verify "$tmp/gpulens.service" 2>"$tmp/err" || fail "systemd-analyze: $(cat "$tmp/err")"
# Warnings are printed without failing; there must be none about this unit.
if grep -i "gpulens.service" "$tmp/err"; then fail "systemd-analyze warns about the unit"; fi
grep -q '^ExecStart=/usr/local/bin/gpulens serve ' "$root/deploy/systemd/gpulens.service" || fail "ExecStart is not gpulens serve"
grep -q '^ExecStart=.* --source=nvml,host ' "$root/deploy/systemd/gpulens.service" || fail "ExecStart does not pin --source=nvml,host"
# The listen address lives in the config file the unit installs: a --listen
# flag in ExecStart would silently override it.
if grep -q '^ExecStart=.*--listen' "$root/deploy/systemd/gpulens.service"; then fail "ExecStart overrides listen: with --listen"; fi
"$gpulens" check-config "$root/deploy/systemd/gpulens.yaml" | grep -qx 'listen: 0.0.0.0:9400' || fail "the unit's config does not set listen"
if "$gpulens" check-config --help >/dev/null 2>&1; then
  "$gpulens" check-config "$root/deploy/systemd/gpulens.yaml" >/dev/null || fail "gpulens check-config rejects deploy/systemd/gpulens.yaml"
fi
"$gpulens" rules --config "$root/deploy/systemd/gpulens.yaml" >/dev/null || fail "gpulens rules rejects deploy/systemd/gpulens.yaml"
# Pinned sources on a machine without a driver: exit 1 naming the reason,
# never the simulator (skipped where an NVIDIA driver is installed).
if ! /sbin/ldconfig -p 2>/dev/null | grep -q libnvidia-ml.so.1; then
  args=$(sed -n 's|^ExecStart=/usr/local/bin/gpulens ||p' "$root/deploy/systemd/gpulens.service" |
         sed "s|--listen=0.0.0.0:9400|--listen=127.0.0.1:0|; s|--config=/etc/gpulens/gpulens.yaml|--config=$root/deploy/systemd/gpulens.yaml|")
  set +e
  # shellcheck disable=SC2086
  timeout 20 "$gpulens" $args >"$tmp/out" 2>&1; rc=$?
  set -e
  [[ $rc == 1 ]] || fail "unit's command without a driver exited $rc, want 1: $(cat "$tmp/out")"
  grep -q 'no GPU source could start' "$tmp/out" || fail "no reason given: $(cat "$tmp/out")"
fi
echo "systemd unit: ok"
