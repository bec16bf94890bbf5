#!/usr/bin/env bash
# `gpulens serve --remote-write` into a real Prometheus remote-write receiver:
# pushed series carry instance and job (remote_write.job), so the shipped
# `by (instance, job)` recording rules and the dashboards' Job variable see
# pushed data as they see scraped data. Costs ≈ 10 s.
set -euo pipefail
GPULENS=$1
source "$(dirname "$0")/lib/stack.sh"
stack_init prometheus curl python3
prom=$(free_port)
printf 'global: {scrape_interval: 1h}\n' > "$STACK/prom.yml"
prometheus --config.file="$STACK/prom.yml" --storage.tsdb.path="$STACK/prom-data" --web.enable-remote-write-receiver \
  --web.listen-address="127.0.0.1:$prom" --log.level=warn >"$STACK/prometheus.log" 2>&1 &
STACK_PIDS+=($!)
wait_http "http://127.0.0.1:$prom/-/ready" 30
printf 'remote_write: {url: "http://127.0.0.1:%s/api/v1/write", job: gpu-nodes}\n' "$prom" > "$STACK/agent.yml"
start_agent pusher "$(free_port)" --source sim --interval 500ms --config "$STACK/agent.yml"
for _ in $(seq 40); do
  n=$(prom_query "$prom" 'count(gpu_up{job="gpu-nodes",instance!=""})' |
      python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else 0)')
  [[ $n == 8 ]] && break
  sleep 0.5
done
[[ $n == 8 ]] || stack_fail "pushed gpu_up with job=gpu-nodes: $n series, want 8"
echo "remote_write: pushed series carry instance and job"
