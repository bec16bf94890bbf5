#!/usr/bin/env bash
# gpu_job_info from the live agent on the stand-in libnvidia-ml.so.1
# (docs/jobs.md): GPU 0's process is a real one started with torchrun's
# and a secret's variables, read from this host's /proc; GPU 1 is named by a
# Slurm mapping file; GPU 2's mapping file is garbage. /metrics carries the
# job ids and ranks and nothing else of the environment, the log names the
# garbage file once, and `top --once` shows each GPU's job.
#   jobs_node_test.sh GPULENS FAKE_NVML
set -euo pipefail
GPULENS=$1 FAKE_NVML=$2
command -v curl >/dev/null || { echo "SKIP: curl not installed"; exit 77; }
work=$(mktemp -d)
env RANK=3 LOCAL_RANK=3 WORLD_SIZE=16 GROUP_RANK=0 MASTER_ADDR=10.0.0.1 MASTER_PORT=29500 \
  HF_TOKEN=hf_do_not_export sleep 300 &
ranked=$!
agent=
trap 'kill $ranked $agent 2>/dev/null; rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
mkdir -p "$work/map"
echo 81234 > "$work/map/1"
printf '\001\002binary\377\n' > "$work/map/2"
cat > "$work/nvml.txt" <<EOT
gpu 0 name="NVIDIA H100 80GB HBM3" uuid=GPU-aaaa gpm=off
gpu 1 name="NVIDIA H100 80GB HBM3" uuid=GPU-bbbb gpm=off
gpu 2 name="NVIDIA H100 80GB HBM3" uuid=GPU-cccc gpm=off
process 0 pid=$ranked mem=1073741824 sm=37
EOT
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
GPULENS_FAKE_NVML_SCRIPT=$work/nvml.txt "$GPULENS" serve --source nvml --nvml-library "$FAKE_NVML" \
  --hpc-job-mapping-dir "$work/map" --listen "127.0.0.1:$port" > "$work/log" 2>&1 &
agent=$!
for _ in $(seq 100); do curl -fs "127.0.0.1:$port/metrics" > "$work/metrics" 2>/dev/null && grep -q '^gpu_job_info{' "$work/metrics" && break; sleep 0.1; done
grep -q '^gpu_job_info{gpu="0",gpu_uuid="GPU-aaaa",gpu_name="NVIDIA H100 80GB HBM3",group_rank="0",job_id="10.0.0.1:29500",local_rank="3",rank="3",source="environment",world_size="16"} 1$' \
  "$work/metrics" || fail "GPU 0's job from its process: $(grep gpu_job_info "$work/metrics")"
grep -q '^gpu_job_info{gpu="1",gpu_uuid="GPU-bbbb",gpu_name="NVIDIA H100 80GB HBM3",job_id="81234",source="slurm"} 1$' \
  "$work/metrics" || fail "GPU 1's job from the mapping file: $(grep gpu_job_info "$work/metrics")"
[[ $(grep -c '^gpu_job_info{' "$work/metrics") -eq 2 ]] || fail "GPU 2 has a job: $(grep gpu_job_info "$work/metrics")"
! grep -q hf_do_not_export "$work/metrics" "$work/log" || fail "a variable outside the job keys left the agent"
echo "ok   /metrics: GPU 0 from the environment, GPU 1 from the mapping, nothing else of the environment"
"$GPULENS" top --once --url "http://127.0.0.1:$port" > "$work/top.txt" 2>&1 || fail "top --once: $(cat "$work/top.txt")"
grep -q "job 81234" "$work/top.txt" || fail "top shows no job for GPU 1: $(cat "$work/top.txt")"
echo "ok   top --once shows the jobs"
kill $agent; wait $agent 2>/dev/null || true; agent=
[[ $(grep -c "map/2: line 1 is not a job id" "$work/log") -eq 1 ]] || fail "the garbage mapping file is not said once: $(cat "$work/log")"
echo "ok   the garbage mapping file named once in the log"
