#!/usr/bin/env bash
# End to end on the simulator: the live agent's /metrics passes promtool's
# linter in every mode, recordings backfill into Prometheus, and bad input
# (flags, configs, ports, Accept headers) gets a clear error and exit code.
set -euo pipefail
GPULENS=$1
source "$(dirname "$0")/lib/stack.sh"   # free_port, start_agent, stack_fail, cleanup trap
stack_init promtool curl
work=$STACK
fail() { stack_fail "$@"; }

# --- no driver: serve exits 1 with the reason; the simulator only on request --
set +e; "$GPULENS" serve --listen 127.0.0.1:1 --nvml-library /nonexistent/libnvidia-ml.so.1 2>"$work/nodriver.err"; rc=$?; set -e
[[ $rc -eq 1 ]] || fail "serve without a GPU source exited $rc, want 1"
grep -q "no GPU source could start (nvml: .*cannot load /nonexistent/libnvidia-ml.so.1.*--source sim" "$work/nodriver.err" \
  || fail "no-driver message: $(cat "$work/nodriver.err")"
# A finding that starts is logged (checked at the end; the diagnosis runs
# every 15 s): GPU 5 overheats after 2 s at 30x scenario speed.
printf 'sources: [sim]\nsource: {sim: {scenario: thermal-throttle-one-gpu, speed: 30}}\ninterval: 200ms\ndiagnose: {thermal_for: 1s}\n' \
  > "$work/findings.yaml"
start_agent findings "$(free_port)" --config "$work/findings.yaml"
# A finding that ends is logged as soon as its cause stops holding (not when
# it leaves the 30-minute window), and gpulens_finding drops to absent: an
# input pipeline starves the GPU for 20 s (10 min at 30x), then is fixed. The
# diagnosis at 15 s sees it ongoing, the one at 30 s sees it ended.
cat > "$work/starved-then-fed.yaml" <<'YAML'
name: starved-then-fed
description: an input pipeline starves the GPU, then is fixed
node: {hostname: sim-fe, gpu_model: h100-sxm, gpus: 1, cpus: 32}
phases:
  - name: starved
    duration: 10m
    workload: {kind: training, duty: 0.3, burst: true, sm_efficiency: 0.85, occupancy: 0.55, tensor: 0.5,
               dram: 0.35, h2d_gbps: 0.6, nvlink_gbps: 8, net_gbps: 3, cpu_busy: 0.97, psi_cpu: 0.6}
  - name: fed
    duration: 1h
    workload: {kind: training, duty: 0.96, sm_efficiency: 0.9, occupancy: 0.6, tensor: 0.6, dram: 0.4,
               h2d_gbps: 1.5, nvlink_gbps: 60, net_gbps: 20, cpu_busy: 0.3}
YAML
printf 'sources: [sim]\nsource: {sim: {scenario: %s, speed: 30}}\ninterval: 200ms\ndiagnose: {default_for: 1s}\n' \
  "$work/starved-then-fed.yaml" > "$work/ended.yaml"
ended_port=$(free_port)
start_agent ended "$ended_port" --config "$work/ended.yaml" --log-format json
# A source that fails is logged with the reason, its gpulens_source_up is 0
# while the other sources keep serving, and it is logged again when it is
# back: the host source reads a procfs copy whose stat file disappears.
mkdir -p "$work/proc/net"
cp /proc/stat /proc/diskstats "$work/proc/"
cp /proc/net/dev "$work/proc/net/"
hostdown_port=$(free_port)
start_agent hostdown "$hostdown_port" --source sim,host --proc-root "$work/proc" --interval 100ms

# version names the build and what NVML loading would find.
"$GPULENS" version --nvml-library /nonexistent/libnvidia-ml.so.1 > "$work/version.txt"
for want in '^gpulens [0-9]' '^commit: [0-9a-f]' '^build: .*, GNU [0-9]' \
            '^nvml: cannot load /nonexistent/libnvidia-ml.so.1: ' '^cuda: '; do
  grep -q "$want" "$work/version.txt" || fail "version lacks $want: $(cat "$work/version.txt")"
done
port=$(free_port)
start_agent fallback "$port" --interval 100ms --source sim --scenario power-cap
fallback_pid=${STACK_PIDS[-1]}
grep -q "SIMULATOR" "$work/agent-fallback.log" || fail "no simulator notice on stderr: $(cat "$work/agent-fallback.log")"
curl -sf "http://127.0.0.1:$port/metrics" | grep '^gpulens_simulated{scenario="power-cap"} 1$' >/dev/null \
  || fail "gpulens_simulated missing"

# --- exposition passes promtool in text, with DCGM names, and OpenMetrics -----
curl -sf "http://127.0.0.1:$port/metrics" > "$work/text.prom"
promtool check metrics < "$work/text.prom" > "$work/lint.txt" 2>&1 || fail "promtool check metrics: $(head -5 "$work/lint.txt")"
[[ ! -s "$work/lint.txt" ]] || fail "promtool complained: $(head -5 "$work/lint.txt")"
grep -q '^gpu_sm_occupancy_ratio{gpu="0",gpu_uuid="GPU-' "$work/text.prom" || fail "article metric missing"
# gpu_info's labels are the ones docs/metrics.md and docs/nvml.md name.
grep -qE '^gpu_info\{gpu="0",gpu_uuid="GPU-[^"]*",gpu_name="[^"]+",driver="[^"]+",pci_bus_id="[^"]+",serial="[^"]+"\} 1$' \
  "$work/text.prom" || fail "gpu_info labels: $(grep '^gpu_info' "$work/text.prom" | head -1)"
grep -q '^gpu_clock_event_active{gpu="5",.*reason="sw_power_cap"} 1$' "$work/text.prom" || fail "power-cap reason on gpu 5 missing"

curl -sf -H 'Accept: application/openmetrics-text;version=1.0.0' "http://127.0.0.1:$port/metrics" > "$work/om.txt"
[[ "$(tail -n1 "$work/om.txt")" == "# EOF" ]] || fail "OpenMetrics body does not end with # EOF"
grep -q '^# TYPE gpu_pcie_rx_bytes counter$' "$work/om.txt" || fail "OpenMetrics counter family name"

curl -sf -H 'Accept-Encoding: gzip' "http://127.0.0.1:$port/metrics" | gunzip | grep '^gpu_up' >/dev/null || fail "gzip body"
# Odd Accept headers still get the text format.
for accept in 'garbage/;;;q=x' 'application/openmetrics-text;version=9.9.9' '*/*' ''; do
  ct=$(curl -s -o /dev/null -w '%{content_type}' -H "Accept: $accept" "http://127.0.0.1:$port/metrics")
  [[ "$ct" == "text/plain; version=0.0.4; charset=utf-8" ]] || fail "Accept '$accept' got '$ct'"
done
# Garbage over HTTP: answered, and the agent keeps serving.
printf 'NOT HTTP AT ALL\r\n\r\n' | timeout 5 bash -c "cat > /dev/tcp/127.0.0.1/$port" || true
curl -sf "http://127.0.0.1:$port/healthz" >/dev/null || fail "agent died after garbage"

# --- snapshot reads the running agent ------------------------------------
"$GPULENS" snapshot --url "http://127.0.0.1:$port" > "$work/snap.txt"
grep -q "^5 .*sw_power_cap" "$work/snap.txt" || fail "snapshot does not show gpu 5 capped: $(cat "$work/snap.txt")"
"$GPULENS" snapshot --url "http://127.0.0.1:$port" --format json | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert d["simulated"] is True and len(d["gpus"]) == 8, d.keys()
assert d["gpus"][5]["fields"]["gpu_clock_event_active{reason=\"sw_power_cap\"}"] == 1
'

# snapshot --url takes what users paste: no scheme, a trailing slash, /metrics.
for u in "127.0.0.1:$port" "http://127.0.0.1:$port/" "http://127.0.0.1:$port/metrics"; do
  "$GPULENS" snapshot --url "$u" > "$work/snap-url.txt" 2>&1 || fail "snapshot --url $u: $(cat "$work/snap-url.txt")"
done
set +e; "$GPULENS" snapshot --url "https://127.0.0.1:$port" 2>"$work/err"; rc=$?; set -e
[[ $rc -eq 2 ]] || fail "snapshot --url https:// exited $rc, want 2"
# The header's separators line up with every row's.
python3 - "$work/snap.txt" <<'PY' || fail "snapshot columns: $(cat "$work/snap.txt")"
import sys
lines = [l for l in open(sys.argv[1]) if "|" in l and "LOST" not in l]
cols = lambda l: [i for i, c in enumerate(l) if c == "|"]
assert all(cols(l) == cols(lines[0]) for l in lines), [cols(l) for l in lines]
PY
# A fault scenario is shown after its faults begin, and says when.
"$GPULENS" snapshot --source sim --scenario thermal-throttle-one-gpu > "$work/snap-fault.txt"
grep -q 'at 70s of scenario time' "$work/snap-fault.txt" || fail "snapshot time note: $(cat "$work/snap-fault.txt")"
grep -q '^5 .*sw_thermal' "$work/snap-fault.txt" || fail "snapshot does not show GPU 5 throttled"
"$GPULENS" snapshot --source host | grep '^no GPUs: the sources (host) report none' >/dev/null || fail "snapshot --source host"
# Unknown flags: named in order with the closest real one; usage errors exit 2.
set +e; "$GPULENS" snapshot --sorce sim 2>"$work/err"; rc=$?; set -e
[[ $rc -eq 2 ]] && grep -q 'unknown flag --sorce (did you mean --source?)' "$work/err" || fail "--sorce: $rc $(cat "$work/err")"
printf 'name: x\nbogus: 1\n' > "$work/unknown-key.yaml"
for bad in "--scenario no-such-scenario" "--listen 0.0.0.0:99999" "--scenario $work/unknown-key.yaml"; do
  set +e; "$GPULENS" serve --source sim $bad 2>"$work/err"; rc=$?; set -e
  [[ $rc -eq 2 ]] || fail "serve $bad exited $rc, want 2: $(cat "$work/err")"
done
set +e; "$GPULENS" diagnose --replay "$work/none.om" --range 10m 2>"$work/err"; rc=$?; set -e
[[ $rc -eq 2 ]] && grep -q -- '--range applies to --prometheus' "$work/err" || fail "--range with --replay: $rc $(cat "$work/err")"

# --- port in use ------------------------------------------------------------
set +e
"$GPULENS" serve --listen "127.0.0.1:$port" --source sim 2>"$work/inuse.err"
rc=$?
set -e
[[ $rc -eq 1 ]] || fail "port in use exited $rc"
grep -q "Address already in use" "$work/inuse.err" || fail "port in use message: $(cat "$work/inuse.err")"

# --- SIGTERM stops the agent cleanly -----------------------------------------
kill -TERM "$fallback_pid"
for _ in $(seq 50); do kill -0 "$fallback_pid" 2>/dev/null || break; sleep 0.1; done
! kill -0 "$fallback_pid" 2>/dev/null || fail "agent ignored SIGTERM"

# --- the log: config at start, source up, remote_write retrying (JSON) ---------
dead=$(free_port)
port=$(free_port)
start_agent logs "$port" --source sim --interval 200ms --log-format json \
  --remote-write "http://127.0.0.1:$dead/api/v1/write"
for _ in $(seq 50); do grep -q remote_write_retrying "$work/agent-logs.log" && break; sleep 0.1; done
python3 - "$work/agent-logs.log" <<'PY' || fail "log lines: $(cat "$work/agent-logs.log")"
import json, sys
events = {}
for line in open(sys.argv[1]):
    if line.startswith("{"):
        e = json.loads(line)
        events[e["event"]] = e
assert events["config"]["sources"] == "sim" and events["config"]["interval"] == "200ms", events
assert events["source_up"]["source"] == "sim", events
assert events["serving"]["url"].endswith("/metrics"), events
r = events["remote_write_retrying"]
assert r["level"] == "warn" and "127.0.0.1" in r["reason"], r
PY
set +e; "$GPULENS" serve --source sim --log-level loud >/dev/null 2>"$work/err"; rc=$?; set -e
[[ $rc -eq 2 ]] || fail "--log-level loud exited $rc"

# --- DCGM names also pass the linter -----------------------------------------
port=$(free_port)
start_agent dcgm "$port" --source sim --scenario healthy-training --dcgm-names --interval 200ms
curl -sf "http://127.0.0.1:$port/metrics" > "$work/dcgm.prom"
# dcgm-exporter's own label names (UUID, modelName, Hostname) are camelCase,
# its counters (typed counter as its CSV types them) have no _total and one of
# its names contains "COUNTER"; dashboards rely on all of it, so those are the
# only notes promtool may make here, and only on DCGM_* names.
promtool check metrics < "$work/dcgm.prom" > "$work/lint2.txt" 2>&1 || true
grep -v -e "^DCGM_[A-Z0-9_]* label names should be written in 'snake_case' not 'camelCase'" \
  -e '^DCGM_[A-Z0-9_]* counter metrics should have "_total" suffix' \
  -e "^DCGM_FI_DEV_PCIE_REPLAY_COUNTER metric name should not include type 'counter'" "$work/lint2.txt" > "$work/lint3.txt" || true
[[ ! -s "$work/lint3.txt" ]] || fail "promtool complained (dcgm): $(head -5 "$work/lint3.txt")"
grep -q '^DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-[^"]*",pci_bus_id="00000000:18:00.0",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",Hostname="[^"]*",DCGM_FI_DRIVER_VERSION="simulated"} [0-9]*$' "$work/dcgm.prom" \
  || fail "DCGM_FI_DEV_GPU_UTIL with dcgm-exporter labels missing"

# --- usage errors exit 2 with a message naming the problem --------------------
expect_usage() {
  local what=$1; shift
  set +e
  "$@" >"$work/out" 2>"$work/err"
  local rc=$?
  set -e
  [[ $rc -eq 2 ]] || fail "$what: exit $rc, want 2"
  [[ -s "$work/err" ]] || fail "$what: no message"
}
expect_usage "unknown flag" "$GPULENS" serve --no-such-flag
expect_usage "unknown command" "$GPULENS" frobnicate
expect_usage "bad interval" "$GPULENS" serve --interval 10q
printf 'listen: 127.0.0.1:1\ninterval: 1s\nsourcez: [sim]\n' > "$work/bad.yaml"
expect_usage "malformed config" "$GPULENS" check-config "$work/bad.yaml"
grep -q "bad.yaml:3:1: config: unknown key \"sourcez\"" "$work/err" || fail "config error text: $(cat "$work/err")"
printf 'interval: [1s\n' > "$work/syntax.yaml"
expect_usage "YAML syntax" "$GPULENS" serve --config "$work/syntax.yaml"
grep -q "syntax.yaml:" "$work/err" || fail "syntax error does not name the file"
printf 'name: broken\nphases:\n  - duration: 1m\n    workload: {duty: 7}\n' > "$work/scenario.yaml"
set +e; "$GPULENS" serve --source sim --scenario "$work/scenario.yaml" --listen 127.0.0.1:1 2>"$work/err"; rc=$?; set -e
[[ $rc -ne 0 ]] || fail "malformed scenario accepted"
grep -q "scenario.yaml:4:.*duty: 7 is out of range" "$work/err" || fail "scenario error text: $(cat "$work/err")"
printf 'sources: [sim]\nsource:\n  sim: {scenario: power-cap}\n' > "$work/good.yaml"
"$GPULENS" check-config "$work/good.yaml" | grep "scenario: power-cap" >/dev/null || fail "check-config on a valid file"
# By default a summary (what serve runs with, the keys not at their default);
# --verbose prints every key of `check-config --keys`, each on its own line.
"$GPULENS" check-config "$work/good.yaml" >"$work/summary.txt"
(($(wc -l <"$work/summary.txt") <= 10)) || fail "check-config prints $(wc -l <"$work/summary.txt") lines by default"
grep -qx 'sources: \[sim\]' "$work/summary.txt" || fail "the summary lacks sources: $(cat "$work/summary.txt")"
"$GPULENS" check-config --verbose "$work/good.yaml" >"$work/verbose.txt"
keys=$("$GPULENS" check-config --keys | grep -c '^| `')
values=$(grep -vcE '^#|^ *[a-z_0-9]+:$' "$work/verbose.txt")
[[ $values == "$keys" ]] || fail "check-config --verbose prints $values values for $keys keys"
grep -q "^# $work/good.yaml: valid; $((keys - 5)) keys at the default not shown" "$work/summary.txt" ||
  fail "the summary's header does not count the keys left out: $(head -1 "$work/summary.txt")"
set +e; "$GPULENS" serve --source sim --proc-root /nonexistent --listen 127.0.0.1:0 --help >/dev/null; rc=$?; set -e
[[ $rc -eq 0 ]] || fail "--help exit $rc"

# --- a recording backfills with the real promtool ---------------------------
"$GPULENS" record --source sim --scenario xid-79 --duration 10m --interval 15s -o "$work/rec.om" 2>/dev/null
[[ "$(tail -n1 "$work/rec.om")" == "# EOF" ]] || fail "recording does not end with # EOF"
grep -q '^gpu_up{gpu="4",.*} 0 [0-9]*\.[0-9]*$' "$work/rec.om" || fail "recording lacks timestamps or the lost GPU"
promtool tsdb create-blocks-from openmetrics "$work/rec.om" "$work/tsdb" > "$work/backfill.txt" 2>&1 \
  || fail "promtool backfill: $(tail -5 "$work/backfill.txt")"
ls "$work/tsdb"/*/meta.json >/dev/null || fail "no TSDB block written"
# --- source_down / source_up ----------------------------------------------------
curl -sf "http://127.0.0.1:$hostdown_port/metrics" | grep '^gpulens_source_up{source="host"} 1$' >/dev/null \
  || fail "host source not up on the procfs copy: $(tail -3 "$work/agent-hostdown.log")"
mv "$work/proc/stat" "$work/proc/stat.away"
for _ in $(seq 50); do grep -q source_down "$work/agent-hostdown.log" && break; sleep 0.1; done
grep -q "warn source_down source=host reason=\"cannot read $work/proc/stat\"" "$work/agent-hostdown.log" \
  || fail "no source_down line naming the file: $(grep -v '^gpulens:' "$work/agent-hostdown.log" | tail -3)"
# The self metrics follow the log line by up to one collection.
for _ in $(seq 50); do
  curl -sf "http://127.0.0.1:$hostdown_port/metrics" > "$work/hostdown.prom"
  grep -q '^gpulens_source_up{source="host"} 0$' "$work/hostdown.prom" && break
  sleep 0.1
done
grep -q '^gpulens_source_up{source="host"} 0$' "$work/hostdown.prom" || fail "gpulens_source_up{host} not 0 while failing"
grep -q '^gpulens_source_up{source="sim"} 1$' "$work/hostdown.prom" || fail "the sim source stopped with the host source"
grep -q '^gpu_up{gpu="0",' "$work/hostdown.prom" || fail "GPU series lost while the host source failed"
mv "$work/proc/stat.away" "$work/proc/stat"
for _ in $(seq 50); do grep -q "info source_up source=host" "$work/agent-hostdown.log" && break; sleep 0.1; done
grep -q "info source_up source=host" "$work/agent-hostdown.log" || fail "no source_up line after recovery"
[[ $(grep -c "source_down source=host" "$work/agent-hostdown.log") -eq 1 ]] \
  || fail "source_down repeated for one outage: $(grep source_down "$work/agent-hostdown.log")"

# --- finding_started / finding_ended ---------------------------------------------
for _ in $(seq 90); do grep -q finding_ended "$work/agent-ended.log" && break; sleep 0.5; done
python3 - "$work/agent-ended.log" <<'PY' || fail "finding log lines: $(grep finding "$work/agent-ended.log")"
import json, sys
events = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
started = [e for e in events if e["event"] == "finding_started"]
ended = [e for e in events if e["event"] == "finding_ended"]
assert [(e["gpu"], e["cause"]) for e in started] == [("0", "input_pipeline")], started
assert [(e["gpu"], e["cause"]) for e in ended] == [("0", "input_pipeline")], ended
assert ended[0]["level"] == "info" and ended[0]["held"].endswith("s") and ended[0]["until"] > started[0]["since"], ended
PY
curl -sf "http://127.0.0.1:$ended_port/metrics" | grep '^gpulens_finding{' >/dev/null \
  && fail "gpulens_finding still exported after the cause stopped"
curl -sf "http://127.0.0.1:$ended_port/api/v1/findings" | python3 -c '
import json, sys
d = json.load(sys.stdin)
f = [f for h in d["hosts"] for g in h["gpus"] for f in g["findings"] if f["cause"] == "input_pipeline"]
assert f and f[0]["state"] == "firing" and f[0]["ongoing"] is False, f' \
  || fail "/api/v1/findings does not keep the ended finding (ongoing false)"

for _ in $(seq 60); do grep -q finding_started "$work/agent-findings.log" && break; sleep 0.5; done
grep -q 'warn finding_started gpu=5 cause=thermal_throttle severity=' "$work/agent-findings.log" \
  || fail "no finding_started log line: $(grep -v '^gpulens:' "$work/agent-findings.log" | tail -5)"
echo "agent CLI end-to-end: ok"
