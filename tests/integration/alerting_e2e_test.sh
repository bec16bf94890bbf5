#!/usr/bin/env bash
# End-to-end alerting on loopback: three agents on simulator scenarios (a
# thermal fault, an XID 79 that loses a GPU, and a healthy node), Prometheus
# scraping them with rules from `gpulens rules --config` (for: durations cut
# to seconds; the scenarios run 4x faster), Alertmanager receiving.
# The expected alerts must reach Alertmanager for the faulty GPUs only, and
# the healthy node must have no alert, firing or pending.
#
#   alerting_e2e_test.sh GPULENS
#
# Exits 77 (skipped) without prometheus, prometheus-alertmanager or curl.
set -euo pipefail
GPULENS=$1
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib/stack.sh"
stack_init prometheus prometheus-alertmanager curl

# Rules with the shipped expressions and short durations.
cat >"$STACK/rules.yaml" <<'YAML'
rules:
  evaluation_interval: 1s
  gpu_util_low: {for: 5s}
  temperature_high: {for: 5s}
  memory_fragmentation: {for: 5s}
  pcie_saturation: {for: 5s}
  sm_occupancy_low: {for: 5s, window: 20s}
  xid_errors: {window: 20s}
  clock_throttle: {for: 5s}
  pcie_link_degraded: {for: 5s}
  gpu_lost: {for: 3s}
  agent_down: {for: 5s}
  source_down: {for: 5s}
  simulated_data: {for: 5s}
YAML
"$GPULENS" rules --config "$STACK/rules.yaml" >"$STACK/rules.yml" || stack_fail "gpulens rules"

declare -A agent_port
for scenario in thermal-throttle-one-gpu xid-79 healthy-training; do
  agent_port[$scenario]=$(free_port)
  printf 'source:\n  sim: {scenario: %s, speed: 4}\n' "$scenario" >"$STACK/$scenario.yaml"
  start_agent "$scenario" "${agent_port[$scenario]}" --config "$STACK/$scenario.yaml" --source sim --interval 1s
done

am_port=$(free_port)
cat >"$STACK/alertmanager.yml" <<'YAML'
route: {receiver: sink, group_wait: 1s, group_interval: 1s}
receivers: [{name: sink}]
YAML
start_alertmanager "$am_port" "$STACK/alertmanager.yml"

prom_port=$(free_port)
cat >"$STACK/prometheus.yml" <<YAML
global: {scrape_interval: 1s, evaluation_interval: 1s}
rule_files: [$STACK/rules.yml]
alerting:
  alertmanagers: [{static_configs: [{targets: ['127.0.0.1:$am_port']}]}]
scrape_configs:
  - job_name: gpulens
    static_configs:
      - targets: ['127.0.0.1:${agent_port[thermal-throttle-one-gpu]}']
        labels: {scenario: thermal}
      - targets: ['127.0.0.1:${agent_port[xid-79]}']
        labels: {scenario: xid}
      - targets: ['127.0.0.1:${agent_port[healthy-training]}']
        labels: {scenario: healthy}
YAML
start_prometheus "$prom_port" "$STACK/prometheus.yml"

# alerts_at_am: "alertname scenario gpu" per active alert in Alertmanager.
alerts_at_am() {
  curl -fsS --max-time 5 "http://127.0.0.1:$am_port/api/v2/alerts?active=true" |
    /usr/bin/python3 -c 'import json,sys
for a in json.load(sys.stdin):
    l = a["labels"]; print(l["alertname"], l.get("scenario", "-"), l.get("gpu", "-"))' | sort -u
}
# Every agent here runs the simulator, so each also raises GpulensSimulatedData.
expected=("GPUTemperatureHigh thermal 5" "GPUClockThrottled thermal 5" "GPUXidError xid 4" "GPULost xid 4"
          "GpulensSimulatedData thermal -" "GpulensSimulatedData xid -" "GpulensSimulatedData healthy -")
start=$SECONDS deadline=$((SECONDS + 150))
while :; do
  got=$(alerts_at_am || true)
  missing=0
  for e in "${expected[@]}"; do grep -qx "$e" <<<"$got" || missing=1; done
  ((missing == 0)) && break
  ((SECONDS < deadline)) || stack_fail "alerts missing at Alertmanager after $((SECONDS - start)) s; got:
$got"
  sleep 1
done
echo "expected alerts at Alertmanager after $((SECONDS - start)) s:"
sed 's/^/  /' <<<"$got"

# Faulty GPUs only: no alert names another GPU of the faulty nodes.
unexpected=$(grep -v -x -F "$(printf '%s\n' "${expected[@]}")" <<<"$got" || true)
[[ -z $unexpected ]] || stack_fail "unexpected alerts at Alertmanager:
$unexpected"

# The healthy node: nothing firing or pending in Prometheus but the
# simulated-data alert, nothing else at Alertmanager.
healthy=$(curl -fsS "http://127.0.0.1:$prom_port/api/v1/alerts" | /usr/bin/python3 -c 'import json,sys
for a in json.load(sys.stdin)["data"]["alerts"]:
    l = a["labels"]
    if l.get("scenario") == "healthy" and l["alertname"] != "GpulensSimulatedData": print(l["alertname"], a["state"])')
[[ -z $healthy ]] || stack_fail "healthy scenario has alerts: $healthy"
echo "alerting e2e: ok ($((SECONDS - start)) s; healthy node: no alerts)"
