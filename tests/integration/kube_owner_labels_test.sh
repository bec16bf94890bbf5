#!/usr/bin/env bash
# The pods' owner labels end to end (docs/jobs.md "Kubernetes"): the agent
# on the stand-in libnvidia-ml.so.1, the fake kubelet (PodResources over
# gRPC: which pod holds which GPU) and a stand-in API server
# (kube_api_fake.py: https with a certificate made here, the bearer token
# and the node's fieldSelector checked). With the labels, GPU 0's pod's
# Kubeflow job becomes gpu_job_info{source="kubernetes"} in /metrics and no
# other label of the pod leaves the agent; labels absent, a 403, garbage
# and an answer above 16 MiB leave the job absent, the last three said once
# in the log; the API server is asked once per refresh period, not per scrape.
#   kube_owner_labels_test.sh GPULENS FAKE_NVML FAKE_KUBELET
set -euo pipefail
GPULENS=$1 FAKE_NVML=$2 FAKE_KUBELET=$3
here=$(cd "$(dirname "$0")" && pwd)
command -v curl >/dev/null || { echo "SKIP: curl not installed"; exit 77; }
command -v openssl >/dev/null || { echo "SKIP: openssl not installed"; exit 77; }
work=$(mktemp -d /tmp/gpulens-kol-XXXXXX)  # short: the kubelet's unix socket lives here
api= kubelet= agent=
trap 'kill $api $kubelet $agent 2>/dev/null; rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 -subj /CN=kubernetes \
  -addext subjectAltName=IP:127.0.0.1 -keyout "$work/key.pem" -out "$work/ca.crt" 2>/dev/null \
  || fail "openssl could not make a certificate"
printf 'the-token-%s\n' "$RANDOM" > "$work/token"
echo labels > "$work/mode"
python3 "$here/kube_api_fake.py" "$work/port" "$work/ca.crt" "$work/key.pem" "$(head -1 "$work/token")" node-a \
  "$work/mode" "$work/requests" 2> "$work/api.err" &
api=$!
printf 'ml llama-worker-0 trainer nvidia.com/gpu GPU-aaaa\nlab notebook jupyter nvidia.com/gpu GPU-bbbb\n' > "$work/pods"
"$FAKE_KUBELET" "$work/kubelet.sock" "$work/pods" > "$work/kubelet.out" 2>&1 &
kubelet=$!
for _ in $(seq 100); do [[ -s $work/port ]] && grep -q ready "$work/kubelet.out" && break; sleep 0.1; done
[[ -s $work/port ]] || fail "the API stand-in did not start: $(cat "$work/api.err")"
grep -q ready "$work/kubelet.out" || fail "the fake kubelet did not start: $(cat "$work/kubelet.out")"
cat > "$work/nvml.txt" <<EOT
gpu 0 name="NVIDIA H100 80GB HBM3" uuid=GPU-aaaa gpm=off
gpu 1 name="NVIDIA H100 80GB HBM3" uuid=GPU-bbbb gpm=off
gpu 2 name="NVIDIA H100 80GB HBM3" uuid=GPU-cccc gpm=off
EOT
cat > "$work/config.yaml" <<EOT
source:
  kubelet:
    socket: $work/kubelet.sock
    token_file: $work/token
    ca_file: $work/ca.crt
EOT
kubelet_job='gpu_job_info{gpu="0",gpu_uuid="GPU-aaaa",gpu_name="NVIDIA H100 80GB HBM3",job_id="ml/llama",source="kubernetes"} 1'

# One agent per answer of the API server: start, wait until it asked (and,
# with labels, until the job shows), scrape, stop.
run_agent() {  # MODE
  echo "$1" > "$work/mode"
  : > "$work/requests"
  local port
  port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  GPULENS_FAKE_NVML_SCRIPT=$work/nvml.txt "$GPULENS" serve --source nvml,kubelet --nvml-library "$FAKE_NVML" \
    --config "$work/config.yaml" --kube-owner-labels --kube-api-url "https://127.0.0.1:$(cat "$work/port")" \
    --node-name node-a --interval 100ms --listen "127.0.0.1:$port" > "$work/log" 2>&1 &
  agent=$!
  for _ in $(seq 150); do
    if curl -fs "127.0.0.1:$port/metrics" > "$work/metrics" 2>/dev/null && [[ -s $work/requests ]]; then
      if [[ $1 != labels ]] || grep -qF "$kubelet_job" "$work/metrics"; then break; fi
    fi
    sleep 0.1
  done
  sleep 1  # ten more samples: a refresh per scrape would show in the request count
  curl -fs "127.0.0.1:$port/metrics" > "$work/metrics" || fail "$1: no /metrics: $(cat "$work/log")"
  kill $agent; wait $agent 2>/dev/null || true; agent=
}

run_agent labels
grep -qF "$kubelet_job" "$work/metrics" || fail "labels: GPU 0 has no Kubernetes job: $(grep gpu_job_info "$work/metrics"; cat "$work/log")"
[[ $(grep -c '^gpu_job_info{' "$work/metrics") -eq 1 ]] || fail "labels: other GPUs got jobs: $(grep gpu_job_info "$work/metrics")"
grep -q 'gpu_pod_info{.*pod="llama-worker-0"' "$work/metrics" || fail "labels: the kubelet's pod is not exported"
! grep -q 's3cr3t-label\|hf_leak\|team-secret' "$work/metrics" "$work/log" || fail "labels: a label other than the owner's left the agent"
grep -q '^GET /api/v1/pods?fieldSelector=spec.nodeName%3Dnode-a auth=ok$' "$work/requests" \
  || fail "labels: the request: $(cat "$work/requests")"
[[ $(wc -l < "$work/requests") -eq 1 ]] || fail "labels: asked more than once within the refresh period: $(cat "$work/requests")"
! grep -q kube_owner_labels_absent "$work/log" || fail "labels: a failure was logged: $(cat "$work/log")"
echo "ok   labels: GPU 0's pod's Kubeflow job in gpu_job_info, nothing else of the pod, one request"

run_agent absent
! grep -q '^gpu_job_info{' "$work/metrics" || fail "absent: a job without owner labels: $(grep gpu_job_info "$work/metrics")"
! grep -q kube_owner_labels_absent "$work/log" || fail "absent: no labels is no failure: $(cat "$work/log")"
echo "ok   absent: no owner label, no job, nothing logged"

for mode in 403 garbage huge; do
  run_agent $mode
  ! grep -q '^gpu_job_info{' "$work/metrics" || fail "$mode: a job: $(grep gpu_job_info "$work/metrics")"
  grep -q '^gpulens_source_up{source="kubelet"} 1' "$work/metrics" || fail "$mode: the kubelet source went down"
  [[ $(grep -c kube_owner_labels_absent "$work/log") -eq 1 ]] || fail "$mode: not said once: $(cat "$work/log")"
  case $mode in
    403) want='answered 403 listing the pods of node node-a: the agent.s service account needs get and list on pods' ;;
    garbage) want='the pod list is not JSON' ;;
    huge) want='exceeds 16777216 bytes' ;;
  esac
  grep kube_owner_labels_absent "$work/log" | grep "$want" >/dev/null || fail "$mode: the log line: $(grep kube_owner "$work/log")"
  echo "ok   $mode: no job, the agent up, said once: $(grep -o 'reason=.*' "$work/log" | head -1 | cut -c1-120)"
done
