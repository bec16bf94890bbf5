#!/usr/bin/env bash
# One Slurm job on two simulated hosts (docs/jobs.md): two-host-lost-gpu-a
# (trn-a, ranks 0-7, GPU 4 lost to XID 79) and two-host-lost-gpu-b (trn-b,
# ranks 8-15, stalled from the same moment), each recorded by its own agent
# with gpu_job_info{job_id="81234"}, joined into one recording as a fleet's
# Prometheus holds them (a hostname label each). The diagnosis names one job
# of 16 GPUs on 2 hosts stopped by GPU 4 of trn-a; every finding of the 15
# other ranks, on either host, waits for it; the HTML report's jobs table
# says the same. And a straggler across hosts: two-host-straggler-a (GPU 2 of
# trn-s01 thermally throttled) slows job 81300, whose ranks on trn-s02 wait
# (small_batch alone) and are its consequences.
#   diagnose_jobs_two_hosts_test.sh GPULENS SOURCE_DIR
set -euo pipefail
gpulens=$1 src=$2
command -v python3 >/dev/null || { echo "SKIP: python3 not installed"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

for h in a b; do
  "$gpulens" record --source sim --scenario "two-host-lost-gpu-$h" --duration 20m -o "$tmp/$h.om" 2> "$tmp/err" \
    || fail "record $h: $(cat "$tmp/err")"
  grep -q "gpu_job_info{.*job_id=\"81234\"" "$tmp/$h.om" || fail "recording $h has no gpu_job_info of job 81234"
done
python3 "$src/tests/integration/merge_recordings.py" "$tmp/both.om" trn-a="$tmp/a.om" trn-b="$tmp/b.om"

"$gpulens" diagnose --replay "$tmp/both.om" --format json --fail-on never > "$tmp/both.json" || fail "diagnose --format json"
python3 - "$tmp/both.json" <<'PY' || exit 1
import json, sys
r = json.load(open(sys.argv[1]))
assert sorted(h["host"] for h in r["hosts"]) == ["trn-a", "trn-b"], [h["host"] for h in r["hosts"]]
jobs = r["jobs"]
assert len(jobs) == 1, jobs
j = jobs[0]
assert j["job"] == "81234" and j["source"] == "slurm", j
assert j["hosts"] == 2 and len(j["gpus"]) == 16, j
assert j["root"] and (j["root"]["host"], j["root"]["gpu"], j["root"]["cause"]) == ("trn-a", "4", "hardware_errors"), j
assert j["hang"] is None, j  # a lost GPU is the root, not a hang
peers = {"trn-a": 0, "trn-b": 0}
for h in r["hosts"]:
    for g in h["gpus"]:
        if (h["host"], g["gpu"]) == ("trn-a", "4"):
            assert g["findings"][0]["cause"] == "hardware_errors", g["findings"]
            continue
        assert g["findings"], f"{h['host']}/{g['gpu']}: the stall is not reported"
        for f in g["findings"]:
            e = f["explained_by"]
            assert e and (e["host"], e["gpu"], e["cause"]) == ("trn-a", "4", "hardware_errors"), \
                f"{h['host']}/{g['gpu']}: {f['cause']} is advice of its own: {e}"
            assert e["why"].startswith("waiting for GPU 4 of trn-a (hardware_errors)"), e["why"]
        peers[h["host"]] += 1
assert peers == {"trn-a": 7, "trn-b": 8}, peers
by = r["waste"]["by_cause"]
total = sum(c["gpu_hours"] for c in by.values())
assert by["hardware_errors"]["gpu_hours"] > 0.95 * total, by
print("ok   two hosts: job 81234, 16 GPUs, root GPU 4 of trn-a, 15 ranks waiting for it, waste", round(total, 2), "GPU-h to hardware")
PY

"$gpulens" diagnose --replay "$tmp/both.om" --fail-on never > "$tmp/both.txt" || fail "diagnose (text)"
grep -Eq "^  job 81234 \(slurm\), 16 GPUs on 2 hosts: stopped by GPU 4 of trn-a, hardware_errors, since " "$tmp/both.txt" \
  || fail "jobs line: $(grep -A2 '^jobs' "$tmp/both.txt")"
echo "ok   text: the job line first"

# Each host alone: trn-b's ranks hang with nothing lost there; trn-a's GPU 4 is the root of its host's part.
"$gpulens" diagnose --replay "$tmp/b.om" --format json --fail-on never > "$tmp/b.json" || fail "diagnose b"
python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))["jobs"][0]
assert j["job"] == "81234" and j["root"] is None and j["hang"] is not None, j
print("ok   trn-b alone: job 81234 hung")' "$tmp/b.json"

# The HTML report's jobs table.
"$gpulens" diagnose --replay "$tmp/both.om" --format html -o "$tmp/both.html" --fail-on never 2> "$tmp/err" \
  || fail "diagnose --format html: $(cat "$tmp/err")"
grep -q '"jobs":\[{"job":"81234"' "$tmp/both.html" || fail "the HTML report carries no jobs"
echo "ok   html: the report carries the job"

# A straggler on one host slows the ranks of the other.
for h in a b; do
  "$gpulens" record --source sim --scenario "two-host-straggler-$h" --duration 20m -o "$tmp/s$h.om" 2> "$tmp/err" \
    || fail "record straggler $h: $(cat "$tmp/err")"
done
python3 "$src/tests/integration/merge_recordings.py" "$tmp/s.om" trn-s01="$tmp/sa.om" trn-s02="$tmp/sb.om"
"$gpulens" diagnose --replay "$tmp/s.om" --format json --fail-on never > "$tmp/s.json" || fail "diagnose straggler"
python3 - "$tmp/s.json" <<'PY' || exit 1
import json, sys
r = json.load(open(sys.argv[1]))
j = r["jobs"][0]
assert len(r["jobs"]) == 1 and j["job"] == "81300" and j["hosts"] == 2 and len(j["gpus"]) == 16, r["jobs"]
assert j["root"] and (j["root"]["host"], j["root"]["gpu"], j["root"]["cause"]) == ("trn-s01", "2", "thermal_throttle"), j
waiting = 0
for h in r["hosts"]:
    for g in h["gpus"]:
        for f in g["findings"]:
            if (h["host"], g["gpu"]) == ("trn-s01", "2"):
                continue
            e = f["explained_by"]
            assert e and (e["host"], e["gpu"], e["cause"]) == ("trn-s01", "2", "thermal_throttle"), \
                f"{h['host']}/{g['gpu']}: {f['cause']} is advice of its own: {e}"
            waiting += h["host"] == "trn-s02"
assert waiting == 8, waiting  # every rank of trn-s02 waits for the straggler
assert "small_batch" not in r["waste"]["by_cause"], r["waste"]["by_cause"]
print("ok   straggler: job 81300 slowed by GPU 2 of trn-s01, the 8 ranks of trn-s02 wait for it")
PY
