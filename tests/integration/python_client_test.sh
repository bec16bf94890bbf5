#!/usr/bin/env bash
# The Python client in a real Python process against a live agent: its
# values appear on the GPU it names (by UUID), with its pid, and disappear
# soon after the process exits. Then the same client's pushes against a real
# Pushgateway that a real Prometheus scrapes (wire compatibility). CUDA is not
# available here: the process uses the PyTorch stand-in
# (clients/python/tests/fake_torch), configured through GPULENS_FAKE_TORCH.
#
#   python_client_test.sh GPULENS
#
# Exits 77 (skipped) without curl, prometheus or prometheus-pushgateway.
set -euo pipefail
GPULENS=$1
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
source "$here/lib/stack.sh"
stack_init curl prometheus prometheus-pushgateway
client=$root/clients/python

port=$(free_port)
start_agent push "$port" --source sim --scenario healthy-training --interval 1s --push
uuid=$(curl -fsS "http://127.0.0.1:$port/api/v1/current" |
  /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["gpus"][1]["uuid"])')

# GPU 1 as the process's device 0: 1000 MiB reserved, 400 MiB allocated,
# free memory in slivers (16 blocks of 2 MiB alternating with allocated ones).
/usr/bin/python3 - "$STACK/torch.json" "${uuid#GPU-}" <<'PY'
import json, sys
state = {"devices": [{"uuid": sys.argv[2], "stats": {
    "reserved_bytes.all.current": 1048576000, "allocated_bytes.all.current": 419430400,
    "active_bytes.all.current": 419430400, "inactive_split_bytes.all.current": 33554432,
    "num_alloc_retries": 2, "num_ooms": 0}}]}
blocks = [{"address": 0x7f0000000000 + i * 2097152, "size": 2097152, "requested_size": 2097152,
           "state": "active_allocated" if i % 2 else "inactive", "frames": []} for i in range(32)]
state["snapshot"] = {"segments": [{"device": 0, "address": 0x7f0000000000, "total_size": 67108864,
    "allocated_size": 33554432, "active_size": 33554432, "requested_size": 33554432, "stream": 0,
    "segment_type": "large", "segment_pool_id": [0, 0], "is_expandable": False, "frames": [],
    "blocks": blocks}], "device_traces": [[]], "allocator_settings": {"expandable_segments": False}}
json.dump(state, open(sys.argv[1], "w"))
PY

run_client() {  # url seconds: a process that runs the client for that long
  GPULENS_FAKE_TORCH=$STACK/torch.json PYTHONPATH="$client:$client/tests/fake_torch" \
    /usr/bin/python3 -m gpulens_client --url "$1" --interval 0.5 -- \
    /usr/bin/python3 -c "import time, torch; time.sleep($2)" &
}

run_client "http://127.0.0.1:$port" 6
pid=$!
metrics() { curl -fsS "http://127.0.0.1:$port/metrics"; }
deadline=$((SECONDS + 15))
until metrics | grep >/dev/null "^gpu_allocator_reserved_bytes{.*pid=\"$pid\""; do
  ((SECONDS < deadline)) || { cat "$STACK/agent-push.log"; stack_fail "no pushed series for pid $pid"; }
  sleep 0.3
done
m=$(metrics)
line() { grep "^$1{" <<<"$m" | grep "pid=\"$pid\"" || stack_fail "no $1 for pid $pid"; }
line gpu_allocator_reserved_bytes | grep >/dev/null "gpu=\"1\",gpu_uuid=\"$uuid\".* 1048576000$" ||
  stack_fail "reserved bytes not on GPU 1 ($uuid): $(line gpu_allocator_reserved_bytes)"
line gpu_memory_fragmentation_ratio | grep >/dev/null ' 0.6$' || stack_fail "slack: $(line gpu_memory_fragmentation_ratio)"
line gpu_allocator_external_fragmentation_ratio | grep 'pool="large"' | grep >/dev/null ' 0.9375$' ||
  stack_fail "external fragmentation: $(line gpu_allocator_external_fragmentation_ratio)"
line gpu_allocator_retries_total | grep >/dev/null ' 2$' || stack_fail "retries: $(line gpu_allocator_retries_total)"
line gpu_allocator_expandable_segments | grep >/dev/null ' 0$' || stack_fail "expandable segments"
line gpu_allocator_snapshot_duration_seconds >/dev/null
"$GPULENS" snapshot --url "127.0.0.1:$port" | grep >/dev/null "GPU 1 pid $pid: slack 60%, external fragmentation 94% (pool large), 2 retries, 0 OOMs" ||
  stack_fail "snapshot does not list the process: $("$GPULENS" snapshot --url "127.0.0.1:$port" | tail -12)"
# The process exits: its series go within seconds (dead pid), not after the TTL.
wait "$pid"
deadline=$((SECONDS + 10))
while metrics | grep >/dev/null "pid=\"$pid\""; do
  ((SECONDS < deadline)) || stack_fail "pid $pid's series still there 10 s after it exited"
  sleep 0.3
done
echo "python client -> agent: ok"

# Wire compatibility: the same pushes accepted by a real Pushgateway, scraped by Prometheus.
pg=$(free_port)
prometheus-pushgateway --web.listen-address="127.0.0.1:$pg" --log.level=warn >"$STACK/pushgateway.log" 2>&1 &
STACK_PIDS+=($!)
wait_http "http://127.0.0.1:$pg/-/ready" 20
prom=$(free_port)
cat >"$STACK/prometheus.yml" <<YAML
global: {scrape_interval: 1s}
scrape_configs:
  - job_name: pushgateway
    honor_labels: true
    static_configs: [{targets: ['127.0.0.1:$pg']}]
YAML
start_prometheus "$prom" "$STACK/prometheus.yml"
run_client "http://127.0.0.1:$pg" 4
pid=$!
deadline=$((SECONDS + 20))
until prom_query "$prom" "gpu_allocator_external_fragmentation_ratio{pid=\"$pid\",job=\"gpulens_client\",pool=\"large\"}" |
    grep >/dev/null '"0.9375"'; do
  ((SECONDS < deadline)) || { cat "$STACK/pushgateway.log"; stack_fail "Prometheus has no pushed value via the Pushgateway"; }
  sleep 0.5
done
prom_query "$prom" "push_failure_time_seconds{pid=\"$pid\"} > 0" | grep >/dev/null '"result":\[\]' ||
  stack_fail "the Pushgateway recorded a failed push"
wait "$pid"
echo "python client -> pushgateway -> prometheus: ok"
