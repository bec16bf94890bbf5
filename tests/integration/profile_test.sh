#!/usr/bin/env bash
# On-demand captures through gpulens_client in real Python programs (Debian's
# CPU PyTorch) against a live agent: `gpulens profile` names the dominant
# function of a busy loop and the DataLoader wait of a starved one; a process
# that exits mid-capture, a wrong token, two requests at once and a result
# larger than the limit each give a clear answer. A torch capture of Debian's
# CPU build (no GPU timeline) prints its top CPU ops; windows counted in
# optimizer steps end after them; --gpu picks the one client process on a GPU
# (clients that push for a GPU through the PyTorch stand-in) or names the
# candidates.
#
#   profile_test.sh GPULENS
#
# Exits 77 (skipped) without curl or a python3 with torch.
set -euo pipefail
GPULENS=$1
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
source "$here/lib/stack.sh"
stack_init curl
/usr/bin/python3 -c 'import torch' 2>/dev/null || { echo "SKIP: no torch for /usr/bin/python3"; exit 77; }
export PYTHONPATH=$root/clients/python
printf 's3cret\n' >"$STACK/token"
printf 'push: {enabled: true, token_file: %s/token}\n' "$STACK" >"$STACK/push.yaml"
port=$(free_port)
url=http://127.0.0.1:$port
start_agent profile "$port" --source sim --scenario healthy-training --interval 1s --config "$STACK/push.yaml"
export GPULENS_URL=$url GPULENS_TOKEN_FILE=$STACK/token

program() {  # name seconds: starts a program, its pid in $prog
  /usr/bin/python3 "$here/profile/$1.py" "$2" >"$STACK/$1.log" 2>&1 &
  prog=$!
  STACK_PIDS+=("$prog")
}

# 1. A loop dominated by one function: the hottest main-thread frame.
program one_op 60
"$GPULENS" profile --url "$url" --token-file "$STACK/token" --pid "$prog" --duration 2s --format json \
  --out "$STACK/one_op.json" >"$STACK/one_op.out" || stack_fail "profile of one_op failed"
/usr/bin/python3 - "$STACK/one_op.out" <<'PY' || stack_fail "one_op: the dominant function is not the hottest"
import json, sys
d = json.load(open(sys.argv[1]))
main = [t for t in d["stacks"]["threads"] if t["main"]][0]
top = max(main["frames"], key=lambda f: f["self"])
assert top["function"] == "dominant_matmul", top
assert top["self"] > 0.5, top
assert d["analysis"]["verdict"] is None, d["analysis"]
assert d["capture"]["state"] == "done"
PY
cmp -s <(/usr/bin/python3 -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1]))["stacks"]))' "$STACK/one_op.out") \
  <(/usr/bin/python3 -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1]))))' "$STACK/one_op.json") ||
  stack_fail "--out does not hold the capture that was analysed"

# 1b. A torch capture of the same loop: the trace goes through `gpulens
# trace`'s analysis; the kept trace's longest operator is the matmul.
sleep 0.5
"$GPULENS" profile --url "$url" --token-file "$STACK/token" --pid "$prog" --duration 2s --kind torch \
  --out "$STACK/one_op.json.gz" >"$STACK/torch.out" || stack_fail "torch profile of one_op failed"
grep -q "verdict: cpu-only - no GPU timeline in the trace" "$STACK/torch.out" ||
  stack_fail "torch: no honest CPU-only analysis: $(cat "$STACK/torch.out")"
grep -q "GPU span" "$STACK/torch.out" && stack_fail "torch: GPU numbers for a CPU-only trace: $(cat "$STACK/torch.out")"
# The first of the top CPU ops (by self time) is the matmul.
grep -A2 "top CPU ops by self time" "$STACK/torch.out" >"$STACK/torch.top"
[[ $(sed -n 3p "$STACK/torch.top") == *" aten::mm" ]] || stack_fail "torch: top CPU op: $(cat "$STACK/torch.out")"
/usr/bin/python3 - "$STACK/one_op.json.gz" <<'PY' || stack_fail "torch: aten::mm is not the longest operator"
import collections, gzip, json, sys
t = json.loads(gzip.decompress(open(sys.argv[1], "rb").read()))
events = t["traceEvents"] if isinstance(t, dict) else t
time = collections.Counter()
for e in events:
    if e.get("ph") == "X" and str(e.get("name", "")).startswith("aten::"):
        time[e["name"]] += e.get("dur", 0)
assert time and time.most_common(1)[0][0] == "aten::mm", time.most_common(3)
PY

# 2. Two requests at once for the same process: the second is refused.
curl -fsS -H 'Authorization: Bearer s3cret' -d "{\"pid\":$prog,\"duration_s\":2}" "$url/api/v1/profile" >/dev/null
code=$(curl -sS -o "$STACK/second" -w '%{http_code}' -H 'Authorization: Bearer s3cret' \
  -d "{\"pid\":$prog,\"duration_s\":2}" "$url/api/v1/profile")
[[ $code == 409 ]] && grep -q "already has a capture" "$STACK/second" || stack_fail "second request: $code $(cat "$STACK/second")"
if "$GPULENS" profile --url "$url" --token-file "$STACK/token" --pid "$prog" --duration 1s 2>"$STACK/second.err"; then
  stack_fail "a second gpulens profile while one runs succeeded"
fi
grep -q "already has a capture" "$STACK/second.err" || stack_fail "second profile: $(cat "$STACK/second.err")"

# 3. A wrong token: refused, naming it.
if "$GPULENS" profile --url "$url" --pid "$prog" --duration 1s 2>"$STACK/token.err"; then
  stack_fail "profile without the token succeeded"
fi
grep -q "HTTP 401" "$STACK/token.err" || stack_fail "no token: $(cat "$STACK/token.err")"
printf 'wrong\n' >"$STACK/wrong"
if "$GPULENS" profile --url "$url" --token-file "$STACK/wrong" --pid "$prog" --duration 1s 2>"$STACK/token.err"; then
  stack_fail "profile with a wrong token succeeded"
fi
grep -q "does not match" "$STACK/token.err" || stack_fail "wrong token: $(cat "$STACK/token.err")"

# 4. A result larger than the limit: the client says so, the capture fails.
sleep 2.5  # the capture of step 2 ends; the agent refuses a second one until then
for _ in 1 2 3 4 5 6 7 8; do
  if "$GPULENS" profile --url "$url" --token-file "$STACK/token" --pid "$prog" --duration 1s --max-bytes 100 \
    2>"$STACK/limit.err" >/dev/null; then stack_fail "a capture beyond --max-bytes succeeded"; fi
  grep -q "already has a capture" "$STACK/limit.err" || break
  sleep 0.5
done
grep -q "larger than max_bytes (100)" "$STACK/limit.err" || stack_fail "limit: $(cat "$STACK/limit.err")"
kill "$prog"

# 5. A loop starved by a slow DataLoader: the main thread waits in it.
program slow_loader 60
"$GPULENS" profile --url "$url" --token-file "$STACK/token" --pid "$prog" --duration 2s >"$STACK/loader.out" ||
  stack_fail "profile of slow_loader failed"
grep -q "verdict: the main thread waits on the DataLoader" "$STACK/loader.out" ||
  stack_fail "slow_loader: $(cat "$STACK/loader.out")"
kill "$prog"

# 6. A process that exits mid-capture: the capture expires with the reason.
program one_op 1.5
sleep 0.5
if "$GPULENS" profile --url "$url" --token-file "$STACK/token" --pid "$prog" --duration 3s 2>"$STACK/exit.err"; then
  stack_fail "a capture in a process that exited succeeded"
fi
grep -Eq "expired: (the client took the request but sent no result|no client of pid)" "$STACK/exit.err" ||
  stack_fail "exit: $(cat "$STACK/exit.err")"

# 7. Windows counted in optimizer steps (a 60 s limit that is never reached).
program train 90
"$GPULENS" profile --url "$url" --token-file "$STACK/token" --pid "$prog" --kind torch --steps 4 --duration 60s \
  --out "$STACK/train.json.gz" >"$STACK/steps.out" || stack_fail "profile --steps failed"
[[ $(head -1 "$STACK/steps.out") =~ ^window:\ 4\ optimizer\ steps\ in\ [0-9.]+\ s$ ]] ||
  stack_fail "steps: $(cat "$STACK/steps.out")"
/usr/bin/python3 - "$STACK/train.json.gz" <<'PY' || stack_fail "steps: the trace does not hold 4 optimizer steps"
import gzip, json, sys
t = json.loads(gzip.decompress(open(sys.argv[1], "rb").read()))
events = t["traceEvents"] if isinstance(t, dict) else t
n = sum(1 for e in events if str(e.get("name", "")).startswith("Optimizer.step#"))
assert n in (3, 4), n  # 3 when the window opened inside a step (its range began before the profiler)
PY
"$GPULENS" profile --url "$url" --token-file "$STACK/token" --pid "$prog" --steps 3 --duration 60s --format json \
  >"$STACK/steps.json" || stack_fail "profile --steps (stacks) failed"
/usr/bin/python3 - "$STACK/steps.json" <<'PY' || stack_fail "steps (stacks): $(cat "$STACK/steps.json")"
import json, sys
c = json.load(open(sys.argv[1]))["capture"]
assert c["steps"] == 3 and c["steps_done"] == 3 and c["window_s"] < 60, c
PY
kill "$prog"

# 8. --gpu: processes that push for a GPU (the PyTorch stand-in names the
# simulated GPU's UUID), two on GPU 1, one on GPU 2.
uuids=$(curl -fsS "$url/api/v1/current" | /usr/bin/python3 -c 'import json,sys; g=json.load(sys.stdin)["gpus"]; print(g[1]["uuid"], g[2]["uuid"])')
read -r uuid1 uuid2 <<<"$uuids"
fake() {  # gpu-uuid: a process with the client, pushing for that GPU; its pid in $prog
  printf '{"devices": [{"uuid": "%s", "stats": {"reserved_bytes.all.current": 1048576, "allocated_bytes.all.current": 524288}}]}' \
    "${1#GPU-}" >"$STACK/fake-$1.json"
  GPULENS_FAKE_TORCH=$STACK/fake-$1.json PYTHONPATH="$root/clients/python:$root/clients/python/tests/fake_torch" \
    /usr/bin/python3 -m gpulens_client --url "$url" --interval 0.2 --token-file "$STACK/token" -- \
    /usr/bin/python3 -c "import time, torch; time.sleep(60)" >"$STACK/fake-$1.log" 2>&1 &
  prog=$!
  STACK_PIDS+=("$prog")
}
fake "$uuid1"; a=$prog
fake "$uuid1"; b=$prog
fake "$uuid2"; c=$prog
deadline=$((SECONDS + 20))
until curl -fsS "$url/metrics" >"$STACK/metrics" && grep -q "pid=\"$a\"" "$STACK/metrics" &&
  grep -q "pid=\"$b\"" "$STACK/metrics" && grep -q "pid=\"$c\"" "$STACK/metrics"; do
  ((SECONDS < deadline)) || stack_fail "the stand-in processes did not push"
  sleep 0.3
done
"$GPULENS" profile --url "$url" --token-file "$STACK/token" --gpu 2 --duration 1s >"$STACK/gpu2.out" 2>"$STACK/gpu2.err" ||
  stack_fail "profile --gpu 2: $(cat "$STACK/gpu2.err")"
grep -q "in pid $c (the client process on GPU 2)" "$STACK/gpu2.err" || stack_fail "gpu 2: $(cat "$STACK/gpu2.err")"
grep -q "^Python stacks over" "$STACK/gpu2.out" || stack_fail "gpu 2: $(cat "$STACK/gpu2.out")"
if "$GPULENS" profile --url "$url" --token-file "$STACK/token" --gpu 1 --duration 1s 2>"$STACK/gpu1.err"; then
  stack_fail "profile --gpu 1 with two client processes succeeded"
fi
lo=$((a < b ? a : b)) hi=$((a < b ? b : a))
grep -q "HTTP 409: .*several processes on GPU 1 run gpulens_client: pids $lo, $hi; choose one with --pid" "$STACK/gpu1.err" ||
  stack_fail "gpu 1: $(cat "$STACK/gpu1.err")"
if "$GPULENS" profile --url "$url" --token-file "$STACK/token" --gpu 3 --duration 1s 2>"$STACK/gpu3.err"; then
  stack_fail "profile --gpu 3 without a client process succeeded"
fi
grep -q "HTTP 404: .*no process on GPU 3" "$STACK/gpu3.err" || stack_fail "gpu 3: $(cat "$STACK/gpu3.err")"
if "$GPULENS" profile --url "$url" --token-file "$STACK/token" --gpu 99 --duration 1s 2>"$STACK/gpu99.err"; then
  stack_fail "profile --gpu 99 succeeded"
fi
grep -q "HTTP 400: .*no GPU 99 on this node (GPUs 0-7)" "$STACK/gpu99.err" || stack_fail "gpu 99: $(cat "$STACK/gpu99.err")"
echo "PASS"
