#!/usr/bin/env bash
# gpulens diagnose --prometheus against a real Prometheus: recordings from
# tests/data/recordings/gen.py (timestamps two hours back, as promtool's
# backfill wants), loaded with `promtool tsdb create-blocks-from openmetrics`
# into a fresh data directory, served by Prometheus on a free loopback port,
# then diagnosed over the range API. The same top causes as with --replay.
#
#   diagnose_prometheus_test.sh GPULENS SOURCE_DIR
#
# Exits 77 (skipped) when prometheus, promtool or python3 is not installed.
set -euo pipefail
gpulens=$1 src=$2
for tool in prometheus promtool python3 curl; do
  command -v "$tool" >/dev/null || { echo "SKIP: $tool not installed"; exit 77; }
done

tmp=$(mktemp -d)
ppid_=
cleanup() {
  [[ -n $ppid_ ]] && kill "$ppid_" 2>/dev/null && wait "$ppid_" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*" >&2
  echo "--- prometheus log (tail)" >&2; tail -20 "$tmp/prometheus.log" >&2 || true
  exit 1
}

start=$(( $(date +%s) / 3600 * 3600 - 3 * 3600 ))
python3 "$src/tests/data/recordings/gen.py" "$tmp/rec" --start "$start"
mkdir -p "$tmp/data"
# Two hosts' worth of data: one recording per case under its own host name.
for rec in input_pipeline_cpu_15s thermal_throttle_60s mig_15s; do
  host=${rec%%_[0-9]*}
  # Each machine its own GPU UUIDs: GPUs of one UUID are one GPU.
  sed -e "s/Hostname=\"node1\"/Hostname=\"$host\"/" -e "s/instance=\"node1:/instance=\"$host:/" \
    -e "s/UUID=\"GPU-node1-/UUID=\"GPU-$host-/" \
    "$tmp/rec/$rec.om" > "$tmp/$rec.om"
  promtool tsdb create-blocks-from openmetrics "$tmp/$rec.om" "$tmp/data" > "$tmp/promtool.log" 2>&1 \
    || { cat "$tmp/promtool.log" >&2; fail "promtool refused $rec"; }
done

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
printf 'global:\n  scrape_interval: 1h\n' > "$tmp/prometheus.yml"
prometheus --config.file="$tmp/prometheus.yml" --storage.tsdb.path="$tmp/data" \
  --web.listen-address="127.0.0.1:$port" --storage.tsdb.retention.time=30d > "$tmp/prometheus.log" 2>&1 &
ppid_=$!
for _ in $(seq 100); do
  curl -sf "http://127.0.0.1:$port/-/ready" >/dev/null && break
  sleep 0.2
done
curl -sf "http://127.0.0.1:$port/-/ready" >/dev/null || fail "prometheus did not start"

end=$(( start + 1200 ))
set +e
"$gpulens" diagnose --prometheus "http://127.0.0.1:$port" --end "$end" --range 20m --step 15s \
  --format json > "$tmp/out.json" 2> "$tmp/err.txt"
rc=$?
set -e
[[ $rc == 3 ]] || { cat "$tmp/err.txt" >&2; fail "exit code $rc, want 3 (findings)"; }
python3 - "$tmp/out.json" <<'PY' || fail "unexpected report: $(head -c 2000 "$tmp/out.json")"
import json, sys
r = json.load(open(sys.argv[1]))
hosts = {h["host"]: h for h in r["hosts"]}
assert set(hosts) == {"input_pipeline_cpu", "thermal_throttle", "mig"}, hosts.keys()
# MIG: each GPU instance on its own, out of Prometheus as out of a file.
mig = {g["gpu"]: g for g in hosts["mig"]["gpus"]}
assert set(mig) == {"0/gi1", "0/gi2"}, mig.keys()
assert mig["0/gi1"]["findings"][0]["cause"] == "idle", mig["0/gi1"]
assert mig["0/gi1"]["mig"] == {"gpu": "0", "gpu_instance_id": "1", "profile": "3g.40gb", "uuid": ""}, mig["0/gi1"]
assert not [f for f in mig["0/gi2"]["findings"] if f["severity"] != "info"], mig["0/gi2"]
for g in hosts["input_pipeline_cpu"]["gpus"]:
    assert g["findings"] and g["findings"][0]["cause"] == "input_pipeline", g
    ev = {e["signal"] for e in g["findings"][0]["evidence"]}
    assert "host_cpu_busy" in ev, ev
for g in hosts["thermal_throttle"]["gpus"]:
    top = g["findings"][0]["cause"] if g["findings"] and g["findings"][0]["severity"] != "info" else "-"
    assert top == ("thermal_throttle" if g["gpu"] == "5" else "-"), (g["gpu"], top)
PY

# --match narrows the fleet to one host.
set +e
"$gpulens" diagnose --prometheus "http://127.0.0.1:$port" --end "$end" --range 20m \
  --match '{Hostname="thermal_throttle"}' --format json > "$tmp/one.json" 2> "$tmp/err.txt"
set -e
python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); assert [h["host"] for h in r["hosts"]] == ["thermal_throttle"], r["hosts"]' \
  "$tmp/one.json" || fail "--match did not narrow to one host"

# A server that is not there: exit 1 with a message.
set +e
"$gpulens" diagnose --prometheus "http://127.0.0.1:1" --range 5m > /dev/null 2> "$tmp/err.txt"
rc=$?
set -e
[[ $rc == 1 ]] || fail "dead server: exit $rc, want 1"
grep -q "prometheus http://127.0.0.1:1" "$tmp/err.txt" || fail "dead server: message $(cat "$tmp/err.txt")"
echo "ok"
