#!/usr/bin/env bash
# Captures triggered by the diagnosis (diagnose.profile_on) in real Python
# programs (Debian's CPU PyTorch) running gpulens_client: the simulator makes
# a finding hold on every GPU, the program's pid is joined to GPUs by a push
# naming it, and the agent captures once in it and attaches the summary to
# the finding: input_pipeline (stacks) names the DataLoader wait of a starved
# loop, kernel_launch (torch) the dominant op of a busy one. The same process
# behind a second GPU's finding is not captured again (one capture per
# process per hour). The summary is in the findings JSON, `diagnose --agent`'s
# text and its HTML report, and on the web page and in that HTML report as
# chromium draws them (when it is at hand). An unknown cause in profile_on, or one a capture
# cannot explain, is refused by check-config and serve; profile_on without
# the push receiver is refused by serve.
#
#   profile_trigger_test.sh GPULENS [BUILD_DIR]   (BUILD_DIR: where the browser tests' npm modules go)
#
# Exits 77 (skipped) without curl or a python3 with torch.
set -euo pipefail
GPULENS=$1 BUILD=${2:-}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
source "$here/lib/stack.sh"
stack_init curl
/usr/bin/python3 -c 'import torch' 2>/dev/null || { echo "SKIP: no torch for /usr/bin/python3"; exit 77; }
export PYTHONPATH=$root/clients/python
printf 's3cret\n' >"$STACK/token"
auth=(-H 'Authorization: Bearer s3cret')

# 1. Bad configurations: refused with the reason, by check-config and serve.
printf 'diagnose: {profile_on: [input_pipeline, kernel_lunch]}\n' >"$STACK/unknown.yaml"
if "$GPULENS" check-config "$STACK/unknown.yaml" >"$STACK/unknown.out" 2>&1; then
  stack_fail "check-config accepted an unknown cause"
fi
grep -F 'diagnose.profile_on: unknown cause "kernel_lunch" (profile_on takes: input_pipeline, idle,' \
  "$STACK/unknown.out" >/dev/null || stack_fail "unknown cause: $(cat "$STACK/unknown.out")"
if "$GPULENS" serve --listen "127.0.0.1:$(free_port)" --source sim --config "$STACK/unknown.yaml" \
  >"$STACK/serve-unknown.out" 2>&1; then
  stack_fail "serve accepted an unknown cause"
fi
grep -F 'unknown cause "kernel_lunch"' "$STACK/serve-unknown.out" >/dev/null ||
  stack_fail "serve, unknown cause: $(cat "$STACK/serve-unknown.out")"
printf 'diagnose: {profile_on: [thermal_throttle]}\n' >"$STACK/gpu-cause.yaml"
if "$GPULENS" check-config "$STACK/gpu-cause.yaml" >"$STACK/gpu-cause.out" 2>&1; then
  stack_fail "check-config accepted thermal_throttle"
fi
grep -F '"thermal_throttle" is a cause of the GPU or the node' "$STACK/gpu-cause.out" >/dev/null ||
  stack_fail "GPU cause: $(cat "$STACK/gpu-cause.out")"
printf 'diagnose: {profile_on: [input_pipeline]}\n' >"$STACK/no-push.yaml"
if "$GPULENS" serve --listen "127.0.0.1:$(free_port)" --source sim --config "$STACK/no-push.yaml" \
  >"$STACK/no-push.out" 2>&1; then
  stack_fail "serve ran profile_on without the push receiver"
fi
grep -F 'diagnose.profile_on needs the push receiver' "$STACK/no-push.out" >/dev/null ||
  stack_fail "no push: $(cat "$STACK/no-push.out")"

config() {  # causes: a config with the receiver, the token and short captures
  printf 'push: {enabled: true, token_file: %s/token}\ndiagnose: {profile_on: [%s], profile_window: 2s}\n' \
    "$STACK" "$1" >"$STACK/config.yaml"
}

# join pid url gpu...: pushes a series naming the pid for each GPU (by UUID).
join() {
  local pid=$1 u=$2; shift 2
  local body="" uuid
  for g in "$@"; do
    uuid=$(curl -fsS "$u/api/v1/current" | /usr/bin/python3 -c "import json,sys; print(json.load(sys.stdin)['gpus'][$g]['uuid'])")
    body+="gpu_allocator_reserved_bytes{gpu_uuid=\"$uuid\",pid=\"$pid\"} 1048576"$'\n'
  done
  printf '%s' "$body" | curl -fsS "${auth[@]}" -X PUT --data-binary @- "$u/metrics/job/join/instance/p$pid" >/dev/null
}

# attached url gpu cause out: waits until that finding's capture is done, its finding in `out`.
attached() {
  local u=$1 gpu=$2 cause=$3 out=$4 deadline=$((SECONDS + 90))
  until curl -fsS "$u/api/v1/findings" >"$STACK/findings.json" && /usr/bin/python3 - "$STACK/findings.json" "$gpu" "$cause" "$out" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
for h in doc["hosts"]:
    for g in h["gpus"]:
        for f in g["findings"]:
            if g["gpu"] == sys.argv[2] and f["cause"] == sys.argv[3] and f.get("profile", {}).get("state") in ("done", "failed"):
                json.dump(f, open(sys.argv[4], "w"))
                sys.exit(0)
sys.exit(1)
PY
  do
    ((SECONDS < deadline)) || stack_fail "no capture attached to $cause on GPU $gpu: $(cat "$STACK/findings.json")"
    sleep 1
  done
}

# 2. input_pipeline on every GPU; a loop starved by its DataLoader joined to GPUs 0 and 1.
config input_pipeline
port=$(free_port)
url=http://127.0.0.1:$port
start_agent loader "$port" --source sim --scenario input-pipeline-cpu --sim-prefill 20m --interval 1s \
  --config "$STACK/config.yaml"
GPULENS_URL=$url GPULENS_TOKEN_FILE=$STACK/token /usr/bin/python3 "$here/profile/slow_loader.py" 120 \
  >"$STACK/slow_loader.log" 2>&1 &
prog=$!
STACK_PIDS+=("$prog")
join "$prog" "$url" 0 1
attached "$url" 0 input_pipeline "$STACK/gpu0.json"
/usr/bin/python3 - "$STACK/gpu0.json" "$prog" <<'PY' || stack_fail "input_pipeline summary: $(cat "$STACK/gpu0.json")"
import json, sys
p = json.load(open(sys.argv[1]))["profile"]
assert p["state"] == "done" and p["kind"] == "stacks" and p["pid"] == int(sys.argv[2]), p
assert p["of"] == "frames" and p["verdict"] == "dataloader", p
assert p["dataloader_wait_share"] > 0.5, p
assert p["top"][0]["name"].startswith("__getitem__ (slow_loader.py:"), p["top"]
assert "the main thread waits on the DataLoader in" in p["summary"], p["summary"]
PY
# GPU 1's finding, the same process: the same capture, none requested again.
attached "$url" 1 input_pipeline "$STACK/gpu1.json"
/usr/bin/python3 - "$STACK/gpu0.json" "$STACK/gpu1.json" <<'PY' || stack_fail "GPU 1: $(cat "$STACK/gpu1.json")"
import json, sys
a, b = (json.load(open(f))["profile"] for f in sys.argv[1:])
assert a["capture"] == b["capture"], (a, b)
PY
sleep 3  # two more diagnoses' worth of ticks: still one request
n=$(grep -c 'profile_requested' "$STACK/agent-loader.log" || true)
[[ $n == 1 ]] || stack_fail "captures requested: $n, expected 1: $(grep profile_ "$STACK/agent-loader.log")"
capture=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["profile"]["capture"])' "$STACK/gpu0.json")
curl -fsS "${auth[@]}" "$url/api/v1/profile/$capture" >"$STACK/capture.json" || stack_fail "the capture is not at the agent"
grep -F '"kind":"stacks"' "$STACK/capture.json" >/dev/null || stack_fail "capture: $(cat "$STACK/capture.json")"
# The text and HTML reports of `diagnose --agent` carry it.
rc=0; "$GPULENS" diagnose --agent "$url" >"$STACK/report.txt" 2>"$STACK/report.err" || rc=$?
((rc == 3)) || stack_fail "diagnose --agent exited $rc: $(cat "$STACK/report.err")"
grep -E "^      profile: stacks capture $capture in pid $prog \(done, [0-9T:Z-]+\): the main thread waits on the DataLoader in" \
  "$STACK/report.txt" >/dev/null || stack_fail "text report: $(cat "$STACK/report.txt")"
rc=0; "$GPULENS" diagnose --agent "$url" --format html -o "$STACK/report.html" 2>"$STACK/html.err" || rc=$?
((rc == 3)) || stack_fail "diagnose --agent --format html exited $rc: $(cat "$STACK/html.err")"
grep -F "\"capture\":\"$capture\"" "$STACK/report.html" >/dev/null || stack_fail "the HTML report has no capture"
# The web page and the HTML report draw it (tests/browser/profile_test.mjs), where chromium is at hand.
if [[ -n $BUILD ]] && command -v chromium >/dev/null && command -v node >/dev/null && command -v npm >/dev/null; then
  mods=$BUILD/browser-tests
  if [[ ! -f $mods/node_modules/.package-lock.json || $root/tests/browser/package-lock.json -nt $mods/node_modules/.package-lock.json ]]; then
    mkdir -p "$mods"
    cp "$root/tests/browser/package.json" "$root/tests/browser/package-lock.json" "$mods/"
    (cd "$mods" && npm ci --ignore-scripts --no-audit --no-fund --prefer-offline --loglevel=error) >"$STACK/npm.log" 2>&1 ||
      stack_fail "npm ci of the browser tests: $(tail -3 "$STACK/npm.log")"
  fi
  cp "$root/tests/browser/profile_test.mjs" "$mods/"
  node "$mods/profile_test.mjs" page "$url" 0 input_pipeline "__getitem__ (slow_loader.py:" ||
    stack_fail "the web page does not show the capture"
  node "$mods/profile_test.mjs" report "$STACK/report.html" 0 input_pipeline "__getitem__ (slow_loader.py:" ||
    stack_fail "the HTML report does not show the capture"
else
  echo "browser checks skipped: no chromium, node or npm, or no build directory given"
fi
kill "$prog"

# 3. kernel_launch: a torch capture of a loop dominated by one op names it.
config kernel_launch
port=$(free_port)
url=http://127.0.0.1:$port
start_agent launch "$port" --source sim --scenario kernel-launch-bound-inference --sim-prefill 30m --interval 1s \
  --config "$STACK/config.yaml"
GPULENS_URL=$url GPULENS_TOKEN_FILE=$STACK/token /usr/bin/python3 "$here/profile/one_op.py" 120 \
  >"$STACK/one_op.log" 2>&1 &
prog=$!
STACK_PIDS+=("$prog")
join "$prog" "$url" 2
attached "$url" 2 kernel_launch "$STACK/gpu2.json"
/usr/bin/python3 - "$STACK/gpu2.json" "$prog" <<'PY' || stack_fail "kernel_launch summary: $(cat "$STACK/gpu2.json")"
import json, sys
p = json.load(open(sys.argv[1]))["profile"]
assert p["state"] == "done" and p["kind"] == "torch" and p["pid"] == int(sys.argv[2]), p
assert p["of"] == "cpu_ops" and p["verdict"] == "cpu-only", p  # Debian's torch: no GPU timeline
assert p["top"][0]["name"] == "aten::mm" and p["top"][0]["share"] > 0.3, p["top"]
assert len(p["top"]) <= 3 and p["dataloader_wait_share"] is None, p
assert p["summary"].startswith("top CPU ops by self time: aten::mm "), p["summary"]
PY
# Findings without a client process carry no profile.
/usr/bin/python3 - "$STACK/findings.json" <<'PY' || stack_fail "a profile on a GPU without a client: $(cat "$STACK/findings.json")"
import json, sys
for h in json.load(open(sys.argv[1]))["hosts"]:
    for g in h["gpus"]:
        for f in g["findings"]:
            assert g["gpu"] == "2" or "profile" not in f, (g["gpu"], f)
PY
kill "$prog"
echo "PASS"
