#!/usr/bin/env bash
# The systemd unit passes `systemd-analyze verify` (with ExecStart pointed at
# the built binary), and its config file passes `gpulens check-config`; it
# turns the kmsg source on with the one privilege it needs (CAP_SYSLOG, the
# /dev/kmsg device), and an agent that cannot read its kernel log says so
# once and goes on serving.
# `systemctl reload` works: the unit's ExecReload command, run with $MAINPID
# set to a running agent, makes it re-read its file (one `reload` log line).
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
agent=""
trap '[[ -n $agent ]] && kill "$agent" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

sed "s|/usr/local/bin/gpulens|$gpulens|" "$root/deploy/systemd/gpulens.service" >"$tmp/gpulens.service"
timeout 60 systemd-analyze verify "$tmp/gpulens.service" 2>"$tmp/err" || fail "systemd-analyze: $(cat "$tmp/err")"
# Warnings are printed without failing; there must be none about this unit.
if grep -i "gpulens.service" "$tmp/err"; then fail "systemd-analyze warns about the unit"; fi
# verify checks ExecReload's command too: a missing one fails it.
sed 's|^ExecReload=/bin/kill |ExecReload=/nonexistent/kill |' "$tmp/gpulens.service" >"$tmp/broken.service"
if timeout 60 systemd-analyze verify "$tmp/broken.service" 2>/dev/null; then
  fail "systemd-analyze verify accepts a missing ExecReload command: the check above proves nothing"
fi

# ExecReload sends SIGHUP to the main process: the agent reloads its file.
reload=$(sed -n 's|^ExecReload=||p' "$root/deploy/systemd/gpulens.service")
[[ $reload == '/bin/kill -HUP $MAINPID' ]] || fail "ExecReload is '$reload', want '/bin/kill -HUP \$MAINPID'"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
printf 'listen: 127.0.0.1:%s\nsources: [sim]\n' "$port" >"$tmp/agent.yaml"
"$gpulens" serve --config "$tmp/agent.yaml" >"$tmp/agent.log" 2>&1 &
agent=$!
for _ in $(seq 100); do
  grep -q "serving url=" "$tmp/agent.log" && break
  kill -0 "$agent" 2>/dev/null || fail "the agent exited: $(cat "$tmp/agent.log")"
  sleep 0.2
done
printf 'listen: 127.0.0.1:%s\nsources: [sim]\ndiagnose: {pcie_util: 0.7}\n' "$port" >"$tmp/agent.yaml"
MAINPID=$agent sh -c "$reload" || fail "ExecReload's command failed"
for _ in $(seq 50); do grep -q "reload.*result=applied" "$tmp/agent.log" && break; sleep 0.2; done
grep -qE 'reload signal=SIGHUP .*result=applied applied="?diagnose\.pcie_util"? ' "$tmp/agent.log" ||
  fail "ExecReload did not reload the agent: $(cat "$tmp/agent.log")"
kill -0 "$agent" 2>/dev/null || fail "the agent stopped on reload"
kill "$agent"; wait "$agent" 2>/dev/null || true; agent=""
grep -q '^ExecStart=/usr/local/bin/gpulens serve ' "$root/deploy/systemd/gpulens.service" || fail "ExecStart is not gpulens serve"
unit=$root/deploy/systemd/gpulens.service
grep -q '^ExecStart=.* --source=nvml,host,kmsg ' "$unit" || fail "ExecStart does not pin --source=nvml,host,kmsg"
grep -qx 'CapabilityBoundingSet=CAP_SYSLOG' "$unit" || fail "the unit does not bound its capabilities to CAP_SYSLOG"
grep -qx 'AmbientCapabilities=CAP_SYSLOG' "$unit" || fail "the unit does not grant CAP_SYSLOG (kmsg under dmesg_restrict)"
grep -qx 'DeviceAllow=/dev/kmsg r' "$unit" || fail "DevicePolicy=closed hides /dev/kmsg: no DeviceAllow=/dev/kmsg r"
if grep -q '^ProtectKernelLogs=yes' "$unit"; then fail "ProtectKernelLogs=yes denies /dev/kmsg to the kmsg source"; fi
# The listen address lives in the config file the unit installs: a --listen
# flag in ExecStart would silently override it.
if grep -q '^ExecStart=.*--listen' "$root/deploy/systemd/gpulens.service"; then fail "ExecStart overrides listen: with --listen"; fi
"$gpulens" check-config "$root/deploy/systemd/gpulens.yaml" | grep -x 'listen: 0.0.0.0:9400' >/dev/null || fail "the unit's config does not set listen"
if "$gpulens" check-config --help >/dev/null 2>&1; then
  "$gpulens" check-config "$root/deploy/systemd/gpulens.yaml" >/dev/null || fail "gpulens check-config rejects deploy/systemd/gpulens.yaml"
fi
"$gpulens" rules --config "$root/deploy/systemd/gpulens.yaml" >/dev/null || fail "gpulens rules rejects deploy/systemd/gpulens.yaml"
# Pinned sources on a machine without a driver: exit 1 naming the reason,
# never the simulator (skipped where an NVIDIA driver is installed).
if ! /sbin/ldconfig -p 2>/dev/null | grep libnvidia-ml.so.1 >/dev/null; then
  args=$(sed -n 's|^ExecStart=/usr/local/bin/gpulens ||p' "$root/deploy/systemd/gpulens.service" |
         sed "s|--listen=0.0.0.0:9400|--listen=127.0.0.1:0|; s|--config=/etc/gpulens/gpulens.yaml|--config=$root/deploy/systemd/gpulens.yaml|")
  set +e
  # shellcheck disable=SC2086
  timeout 20 "$gpulens" $args >"$tmp/out" 2>&1; rc=$?
  set -e
  [[ $rc == 1 ]] || fail "unit's command without a driver exited $rc, want 1: $(cat "$tmp/out")"
  grep -q 'no GPU source could start' "$tmp/out" || fail "no reason given: $(cat "$tmp/out")"
fi
# A kernel log the agent may not read: one line saying so and why, then it
# serves. Root reads a mode-0 file anyway, so the agent runs as nobody there.
command -v curl >/dev/null || { echo "SKIP: curl not installed (the rest passed)"; exit 77; }
chmod 755 "$tmp"
: >"$tmp/kmsg" && chmod 000 "$tmp/kmsg"
as_user=()
if [[ $(id -u) == 0 ]]; then
  command -v setpriv >/dev/null || { echo "SKIP: setpriv not installed (the rest passed)"; exit 77; }
  as_user=(setpriv --reuid=65534 --regid=65534 --clear-groups)
fi
port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"${as_user[@]}" "$gpulens" serve --source=sim,kmsg --kmsg-path="$tmp/kmsg" --listen="127.0.0.1:$port" \
  >"$tmp/agent.log" 2>&1 &
agent=$!
trap 'kill "$agent" 2>/dev/null || true; wait "$agent" 2>/dev/null || true; rm -rf "$tmp"' EXIT
deadline=$((SECONDS + 20))
until curl -fs -o "$tmp/metrics" --max-time 2 "http://127.0.0.1:$port/metrics"; do
  kill -0 "$agent" 2>/dev/null || fail "the agent stopped over an unreadable kernel log: $(cat "$tmp/agent.log")"
  ((SECONDS < deadline)) || fail "agent not serving after 20 s: $(cat "$tmp/agent.log")"
  sleep 0.3
done
grep -q '^gpulens_source_up{source="sim"} 1' "$tmp/metrics" || fail "the sim source is not up beside the unreadable log"
sleep 2  # a few collections: the line must not repeat
[[ $(grep -c "$tmp/kmsg" "$tmp/agent.log") == 1 ]] || fail "want one line about $tmp/kmsg: $(cat "$tmp/agent.log")"
grep -q "kmsg: not applicable: cannot open kernel log $tmp/kmsg: Permission denied (reading the kernel log needs root or CAP_SYSLOG" \
  "$tmp/agent.log" || fail "the line does not say what and why: $(cat "$tmp/agent.log")"
echo "systemd unit: ok"
