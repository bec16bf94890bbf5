#!/usr/bin/env bash
# The xid-79 scenario end to end (docs/jobs.md): GPU 4 falls off the bus and
# its seven peers stall. Through a recording (`record` + `diagnose --replay`)
# and live (`top --once` on the simulator): GPU 4 is the job's root
# (hardware_errors); every finding of a peer is explained by it ("waiting for
# GPU 4 of <host> (hardware_errors)") with no advice of its own; the
# waste summary charges the lost GPU-hours to the hardware, none to the batch
# size.
#   diagnose_jobs_test.sh GPULENS
set -euo pipefail
gpulens=$1
command -v python3 >/dev/null || { echo "SKIP: python3 not installed"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$gpulens" record --source sim --scenario xid-79 --duration 30m -o "$tmp/x.om" 2> "$tmp/err" \
  || fail "record: $(cat "$tmp/err")"
"$gpulens" diagnose --replay "$tmp/x.om" --format json --fail-on never > "$tmp/x.json" || fail "diagnose --format json"
python3 - "$tmp/x.json" <<'PY' || exit 1
import json, sys
r = json.load(open(sys.argv[1]))
jobs = r["jobs"]
assert len(jobs) == 1, jobs
j = jobs[0]
host = r["hosts"][0]["host"]  # the recording's host (no job information: one job per host)
assert j["source"] == "host" and j["job"] == host, j
assert len(j["gpus"]) == 8 and f"{host}/4" in j["gpus"], j
assert j["root"] and j["root"]["gpu"] == "4" and j["root"]["cause"] == "hardware_errors", j
assert j["root"]["host"] == host, j
peers = 0
for g in r["hosts"][0]["gpus"]:
    f = g["findings"]
    if g["gpu"] == "4":
        assert f and f[0]["cause"] == "hardware_errors" and f[0]["severity"] == "critical", f
        continue
    assert f, f"GPU {g['gpu']}: the stall is not reported"
    for x in f:
        e = x["explained_by"]
        assert e and e["cause"] == "hardware_errors" and e["gpu"] == "4" and e["host"] == host, \
            f"GPU {g['gpu']}: {x['cause']} is advice of its own: {e}"
        assert e["why"].startswith(f"waiting for GPU 4 of {host} (hardware_errors)"), e["why"]
        assert x["action"].startswith("None of its own"), x["action"]
    peers += 1
assert peers == 7, peers
by = r["waste"]["by_cause"]
assert "small_batch" not in by, by
total = sum(c["gpu_hours"] for c in by.values())
assert by["hardware_errors"]["gpu_hours"] > 0.95 * total, by
assert abs(j["waste_gpu_hours"] - total) < 1e-3, (j["waste_gpu_hours"], total)
print("ok   replay json: GPU 4 is the root, 7 peers explained, waste", round(total, 2), "GPU-hours to hardware")
PY

"$gpulens" diagnose --replay "$tmp/x.om" --fail-on never > "$tmp/x.txt" || fail "diagnose (text)"
grep -q "^jobs$" "$tmp/x.txt" || fail "no jobs section: $(head -20 "$tmp/x.txt")"
grep -Eq "^  job ([^ ]+) \(the GPUs of one host\), 8 GPUs on 1 host: stopped by GPU 4 of \1, hardware_errors, since " \
  "$tmp/x.txt" || fail "jobs line: $(grep -A2 '^jobs' "$tmp/x.txt")"
[[ $(grep -n '^jobs$' "$tmp/x.txt" | cut -d: -f1) -lt $(grep -n '^host ' "$tmp/x.txt" | head -1 | cut -d: -f1) ]] \
  || fail "the jobs section does not come first"
grep -q "fixing the hardware is worth" "$tmp/x.txt" || fail "waste: $(grep -A3 '^waste' "$tmp/x.txt")"
! grep -q "fixing the batch size" "$tmp/x.txt" || fail "batch size charged: $(grep -A3 '^waste' "$tmp/x.txt")"
! grep -q "Larger batches" "$tmp/x.txt" || fail "small_batch advice given to a stalled peer"
echo "ok   replay text: jobs section first, the hardware charged"

"$gpulens" top --once --source sim --scenario xid-79 --sim-prefill 30m > "$tmp/top.txt" 2> "$tmp/err" \
  || fail "top --once: $(cat "$tmp/err")"
grep -q "hardware_errors" "$tmp/top.txt" || fail "top: no hardware_errors: $(cat "$tmp/top.txt")"
grep -Eq "waiting for GPU 4 of [^ ]+ \(hardware_errors\)" "$tmp/top.txt" \
  || fail "top: the peers are not shown waiting for GPU 4: $(cat "$tmp/top.txt")"
echo "ok   top --once: the peers wait for GPU 4"

# A hang: every GPU spins in NCCL with none lost and none slow.
"$gpulens" record --source sim --scenario nccl-hang --duration 20m -o "$tmp/h.om" 2> "$tmp/err" \
  || fail "record nccl-hang: $(cat "$tmp/err")"
"$gpulens" diagnose --replay "$tmp/h.om" --format json --fail-on never > "$tmp/h.json" || fail "diagnose nccl-hang"
python3 - "$tmp/h.json" <<'PY' || exit 1
import json, sys
r = json.load(open(sys.argv[1]))
j = r["jobs"][0]
assert j["root"] is None, j
assert j["hang"] is not None, j
assert j["hang"]["first"] is None, j  # every rank stopped at once
since = j["hang"]["since"]
assert r["window"]["from"] < since < r["window"]["to"], (since, r["window"])
print("ok   nccl-hang: the job hung since", since)
PY
"$gpulens" diagnose --replay "$tmp/h.om" --fail-on never | grep -E "^  job [^ ]+ \(the GPUs of one host\), 8 GPUs on 1 host: hung since " >/dev/null \
  || fail "nccl-hang text: no hung job line"
