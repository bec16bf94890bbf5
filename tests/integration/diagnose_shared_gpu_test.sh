#!/usr/bin/env bash
# A GPU two jobs claim at once, through a recording (docs/jobs.md "A GPU two
# jobs claim"): on host n1, job 81234 runs on GPUs 0-1 and job 81240 on GPUs
# 1-2 (GPU 1's two gpu_job_info series overlap in time: both claim it); GPU
# 3 ran job 81100 first, which ended, then 81240 (sequential: no claim).
# `diagnose --replay` lists GPU 1 in both jobs and says so on the GPU and on
# each job (JSON, text, HTML); GPU 3 is in 81240 only and 81100 is no job.
#   diagnose_shared_gpu_test.sh GPULENS
set -euo pipefail
gpulens=$1
command -v python3 >/dev/null || { echo "SKIP: python3 not installed"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

python3 - "$tmp/shared.om" <<'PY'
import sys
t0, step, n = 1764410400, 15, 81  # 20 minutes
fams = {
    "gpu_utilization_ratio": 0.95, "gpu_sm_active_ratio": 0.85, "gpu_sm_occupancy_ratio": 0.5,
    "gpu_memory_used_bytes": 60e9, "gpu_memory_free_bytes": 20e9, "gpu_up": 1,
}
claims = [  # gpu, job, first point, last point
    ("0", "81234", 0, n - 1), ("1", "81234", 0, n - 1), ("1", "81240", 20, n - 1),
    ("2", "81240", 0, n - 1), ("3", "81100", 0, 31), ("3", "81240", 36, n - 1),
]
with open(sys.argv[1], "w") as out:
    for fam, v in fams.items():
        out.write(f"# TYPE {fam} gauge\n")
        for gpu in "0123":
            for i in range(n):
                out.write(f'{fam}{{hostname="n1",gpu="{gpu}"}} {v} {t0 + i * step}.000\n')
    out.write("# TYPE gpu_job_info gauge\n")
    for gpu, job, a, b in claims:
        for i in range(a, b + 1):
            out.write(f'gpu_job_info{{hostname="n1",gpu="{gpu}",job_id="{job}",source="slurm"}} 1 {t0 + i * step}.000\n')
    out.write("# EOF\n")
PY

"$gpulens" diagnose --replay "$tmp/shared.om" --format json --fail-on never > "$tmp/r.json" || fail "diagnose --format json"
python3 - "$tmp/r.json" <<'PY' || exit 1
import json, sys
r = json.load(open(sys.argv[1]))
jobs = {j["job"]: j for j in r["jobs"]}
assert set(jobs) == {"81234", "81240"}, list(jobs)  # 81100 ended before 81240 started on GPU 3: no claim
assert jobs["81234"]["gpus"] == ["n1/0", "n1/1"], jobs["81234"]
assert jobs["81240"]["gpus"] == ["n1/1", "n1/2", "n1/3"], jobs["81240"]
assert jobs["81234"]["notes"] == ["GPU 1 of n1 is also claimed by job 81240 at the same time: it is listed under each, "
                                  "its waste counts in each job"], jobs["81234"]["notes"]
assert jobs["81240"]["notes"] == ["GPU 1 of n1 is also claimed by job 81234 at the same time: it is listed under each, "
                                  "its waste counts in each job"], jobs["81240"]["notes"]
gpus = {g["gpu"]: g for g in r["hosts"][0]["gpus"]}
assert any("claimed by 2 jobs at the same time (81234, 81240)" in n for n in gpus["1"]["notes"]), gpus["1"]["notes"]
for g in "023":
    assert not any("claimed" in n for n in gpus[g]["notes"]), (g, gpus[g]["notes"])
print("ok   replay json: GPU 1 in both jobs with a note on each; GPU 3's earlier job gave way")
PY

"$gpulens" diagnose --replay "$tmp/shared.om" --fail-on never > "$tmp/r.txt" || fail "diagnose (text)"
grep -q "^  job 81234 (slurm), 2 GPUs on 1 host" "$tmp/r.txt" || fail "text: job 81234: $(grep -A8 '^jobs' "$tmp/r.txt")"
grep -q "^  job 81240 (slurm), 3 GPUs on 1 host" "$tmp/r.txt" || fail "text: job 81240: $(grep -A8 '^jobs' "$tmp/r.txt")"
[[ $(grep -c "note: GPU 1 of n1 is also claimed by job" "$tmp/r.txt") -eq 2 ]] || fail "text: the jobs' notes: $(grep -A8 '^jobs' "$tmp/r.txt")"
echo "ok   replay text: both jobs, each with its note"

"$gpulens" diagnose --replay "$tmp/shared.om" --format html -o "$tmp/r.html" --fail-on never 2> "$tmp/err" || fail "html: $(cat "$tmp/err")"
grep -q "GPU 1 of n1 is also claimed by job 81240" "$tmp/r.html" || fail "html: the job's note is not in the page's data"
echo "ok   replay html: the note is in the report"
