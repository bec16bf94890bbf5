#!/usr/bin/env bash
# remote_write end to end: push synthetic series with remote_write_driver into
# a real receiver (VictoriaMetrics, or Prometheus with its remote-write
# receiver), stop and restart the receiver in the middle of the run, then
# query every sample back.
#
#   remote_write_test.sh DRIVER vm|prometheus
#
# Two writers run at once: "full" has a queue big enough for the outage and
# must deliver every sample; "small" has a queue smaller than the outage and
# must drop the oldest samples, count them, and deliver exactly the rest.
# Exits 77 (skipped) when the receiver, curl or jq is not installed.
set -euo pipefail
driver=$1 kind=$2
series=20 steps=50 interval_ms=100 total=$((20 * 50))

case $kind in
  vm) receiver=victoria-metrics ;;
  prometheus) receiver=prometheus ;;
  *) echo "usage: $0 DRIVER vm|prometheus" >&2; exit 2 ;;
esac
for tool in $receiver curl jq; do
  command -v "$tool" >/dev/null || { echo "SKIP: $tool not installed"; exit 77; }
done

tmp=$(mktemp -d)
rpid=
cleanup() {
  [[ -n $rpid ]] && kill "$rpid" 2>/dev/null && wait "$rpid" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*" >&2
  echo "--- receiver log (tail)" >&2; tail -20 "$tmp/receiver.log" >&2 || true
  exit 1
}

port=$("$driver" --free-port)
base=http://127.0.0.1:$port
printf 'global:\n  scrape_interval: 1h\n' >"$tmp/prometheus.yml"

start_receiver() {
  if [[ $kind == vm ]]; then
    victoria-metrics -storageDataPath "$tmp/data" -httpListenAddr "127.0.0.1:$port" -retentionPeriod 1 \
      -loggerLevel WARN >>"$tmp/receiver.log" 2>&1 &
    ready=$base/health
  else
    prometheus --config.file="$tmp/prometheus.yml" --storage.tsdb.path="$tmp/data" \
      --web.listen-address="127.0.0.1:$port" --web.enable-remote-write-receiver --log.level=warn \
      >>"$tmp/receiver.log" 2>&1 &
    ready=$base/-/ready
  fi
  rpid=$!
  for _ in $(seq 100); do
    curl -sf "$ready" >/dev/null && return 0
    sleep 0.1
  done
  fail "$receiver did not become ready on port $port"
}
stop_receiver() {
  kill -TERM "$rpid"
  wait "$rpid" || true
  rpid=
}

# Prints one line per series: {"g": gpu, "s": [values in time order, duplicates removed]}.
stored() {
  local instance=$1
  if [[ $kind == vm ]]; then
    curl -sf "$base/internal/force_flush" >/dev/null
    curl -sf "$base/api/v1/export" --data-urlencode "match[]={__name__=\"gpu_power_watts\",instance=\"$instance\"}" |
      jq -c '{g: (.metric.gpu | tonumber), s: ([.timestamps, .values] | transpose | unique_by(.[0]) | map(.[1]))}'
  else
    curl -sf "$base/api/v1/query" --data-urlencode "query=gpu_power_watts{instance=\"$instance\"}[1h]" |
      jq -c '.data.result[] | {g: (.metric.gpu | tonumber), s: (.values | map(.[1] | tonumber))}'
  fi
}

start_receiver
url=$base/api/v1/write
"$driver" --url "$url" --series $series --steps $steps --interval-ms $interval_ms --instance full \
  >"$tmp/full.json" &
full_pid=$!
"$driver" --url "$url" --series $series --steps $steps --interval-ms $interval_ms --instance small \
  --queue 200 --batch 20 >"$tmp/small.json" &
small_pid=$!
sleep 1.5
stop_receiver            # outage of ~2 s = 20 steps = 400 samples per writer
sleep 2
start_receiver
wait $full_pid || fail "driver (full) did not flush its queue: $(cat "$tmp/full.json")"
wait $small_pid || fail "driver (small) did not flush its queue: $(cat "$tmp/small.json")"
echo "full:  $(cat "$tmp/full.json")"
echo "small: $(cat "$tmp/small.json")"

jq -e --argjson n $total '.sent == $n and .dropped == 0 and .failed == 0 and .retries > 0' "$tmp/full.json" \
  >/dev/null || fail "full writer: expected $total sent, none dropped, some retries"
jq -e --argjson n $total '.dropped > 0 and .failed == 0 and .sent + .dropped == $n' "$tmp/small.json" \
  >/dev/null || fail "small writer: expected drops, and sent + dropped == $total"
small_sent=$(jq .sent "$tmp/small.json")

# Every sample of "full" comes back with its exact value; "small" has
# exactly what it sent. Poll briefly: receivers index asynchronously.
for attempt in $(seq 30); do
  full_ok=$(stored full | jq -s --argjson series $series --argjson steps $steps \
    'length == $series and all(.[]; . as $x | $x.s == [range(0; $steps) | . + $x.g * 1000])')
  small_count=$(stored small | jq -s 'map(.s | length) | add // 0')
  [[ $full_ok == true && $small_count == "$small_sent" ]] && break
  [[ $attempt == 30 ]] && fail "stored: full complete=$full_ok, small $small_count samples (sent $small_sent)"
  sleep 0.2
done
echo "PASS: $receiver holds all $total samples of full and the $small_sent sent by small"
