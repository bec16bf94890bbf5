#!/usr/bin/env bash
# Everything a pusher or a scrape target sends is checked at the boundary:
# pushes with a label value that is not UTF-8, OTLP attribute keys "" and
# __name__, an OTLP int of 2^64-1, negative and infinite counters, groups
# that differ only in job/instance, and a scrape target whose page carries
# the same (invalid UTF-8, 10,000 labels, duplicates, -1 and +Inf counters,
# __name__ as a label) beside targets answering gzip bytes or a page cut
# short (no length, no final newline), and a whole page (with a length)
# whose last line lacks its newline, which is read. Then a real Prometheus scrapes the agent: up = 1 (the page is
# valid), the good series are there and none of the bad ones. Also: a job
# name in base64 and a two-member gzip body are taken. About 15 s.
set -euo pipefail
GPULENS=$1
source "$(dirname "$0")/lib/stack.sh"
stack_init curl python3 prometheus

pages=$(free_port) agent=$(free_port) prom=$(free_port)
/usr/bin/python3 - "$pages" >"$STACK/pages.log" 2>&1 <<'PY' &
import gzip, http.server, sys
many = ",".join(f'l{i}="x"' for i in range(10000))
hostile = (
    b'# TYPE node_network_receive_bytes_total counter\n'
    b'node_network_receive_bytes_total{device="good0"} 100\n'
    b'node_network_receive_bytes_total{device="bad\xff\xfe"} 1\n'
    b'node_network_receive_bytes_total{device="many",' + many.encode() + b'} 2\n'
    b'node_network_receive_bytes_total{device="dup"} 5\n'
    b'node_network_receive_bytes_total{device="dup"} 5\n'
    b'node_network_receive_bytes_total{device="neg"} -1\n'
    b'node_network_receive_bytes_total{device="inf"} +Inf\n'
    b'node_network_receive_bytes_total{device="named",__name__="x"} 3\n')
pages = {"/hostile": hostile,
         "/cut": b'node_network_receive_bytes_total{device="cut0"} 1\nnode_network_receive_bytes_total{device="cut1"} 1',
         "/nonl": b'node_network_receive_bytes_total{device="nonl0"} 1\nnode_network_receive_bytes_total{device="nonl1"} 2',
         "/gzip": gzip.compress(b'node_network_receive_bytes_total{device="gz0"} 1\n')}
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = pages.get(self.path)
        if body is None:
            self.send_error(404); return
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        if self.path != "/cut":  # /cut: no length, the body ends with the connection
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a): pass
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
PY
STACK_PIDS+=($!)
wait_http "http://127.0.0.1:$pages/hostile" 20
P="http://127.0.0.1:$pages"
cat >"$STACK/gpulens.yaml" <<EOF2
sources: [sim, scrape]
push: {enabled: true}
source:
  scrape:
    interval: 1s
    targets: [$P/hostile, $P/cut, $P/nonl, $P/gzip]
EOF2
start_agent main "$agent" --config "$STACK/gpulens.yaml" --scenario healthy-training --interval 1s
A="http://127.0.0.1:$agent"
uuid=$(curl -fsS "$A/api/v1/current" | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["gpus"][0]["uuid"])')

push() {  # expected-status method path body [content-type] [encoding]
  local want=$1 method=$2 path=$3 body=$4 type=${5:-text/plain} enc=${6:-}
  local args=(-s -o "$STACK/answer" -w '%{http_code}' -X "$method" -H "Content-Type: $type" --data-binary @"$body")
  [[ -n $enc ]] && args+=(-H "Content-Encoding: $enc")
  local got
  got=$(curl "${args[@]}" "$A$path")
  [[ $got == "$want" ]] || stack_fail "$method $path: HTTP $got, want $want: $(cat "$STACK/answer")"
}
f() { printf '%b' "$1" >"$STACK/body"; echo "$STACK/body"; }
otlp() {  # extra-attribute-json int-value
  cat >"$STACK/body" <<EOF2
{"resourceMetrics":[{"resource":{"attributes":[{"key":"gpu.uuid","value":{"stringValue":"$uuid"}}$1]},
 "scopeMetrics":[{"metrics":[{"name":"gpu_allocator_retries_total","sum":{"isMonotonic":true,
 "aggregationTemporality":2,"dataPoints":[{"asInt":$2}]}}]}]}]}
EOF2
  echo "$STACK/body"
}
frag="gpu_memory_fragmentation_ratio{gpu_uuid=\"$uuid\""
push 400 PUT /metrics/job/bad "$(f "$frag,pool=\"bad\\xff\"} 0.5\n")"
grep -q '"pool"' "$STACK/answer" || stack_fail "the 400 does not name the label: $(cat "$STACK/answer")"
push 400 PUT /metrics/job/bad "$(f "gpu_allocator_retries_total{gpu_uuid=\"$uuid\"} -1\n")"
push 400 PUT /metrics/job/bad "$(f "gpu_allocator_retries_total{gpu_uuid=\"$uuid\"} +Inf\n")"
push 400 POST /v1/metrics "$(otlp ',{"key":"","value":{"stringValue":"x"}}' 1)" application/json
push 400 POST /v1/metrics "$(otlp ',{"key":"__name__","value":{"stringValue":"x"}}' 1)" application/json
push 400 POST /v1/metrics "$(otlp '' 18446744073709551615)" application/json
grep -q 'int64 range' "$STACK/answer" || stack_fail "2^64-1: $(cat "$STACK/answer")"
push 200 PUT /metrics/job/a/instance/x "$(f "$frag,pool=\"shared\"} 0.25\n")"
push 409 PUT /metrics/job/b/instance/x "$(f "$frag,pool=\"shared\"} 0.75\n")"
# A job name in base64 ("a/b") and a body of two gzip members.
push 200 PUT /metrics/job@base64/YS9i "$(f "$frag,pool=\"b64\"} 0.5\n")"
printf '%b' "$frag,pool=\"gz1\"} 0.1\n" | gzip >"$STACK/gz"
printf '%b' "$frag,pool=\"gz2\"} 0.2\n" | gzip >>"$STACK/gz"
push 200 PUT /metrics/job/gz "$STACK/gz" text/plain gzip

cat >"$STACK/prometheus.yml" <<EOF2
global: {scrape_interval: 1s}
scrape_configs:
  - job_name: gpulens
    static_configs: [{targets: ["127.0.0.1:$agent"]}]
EOF2
start_prometheus "$prom" "$STACK/prometheus.yml"
value() {  # expr -> first value or "none"
  prom_query "$prom" "$1" | /usr/bin/python3 -c 'import json,sys
r = json.load(sys.stdin)["data"]["result"]
print(r[0]["value"][1] if r else "none")'
}
deadline=$((SECONDS + 30))
until [[ $(value 'up{job="gpulens"}') == 1 && $(value 'host_network_receive_bytes_total{device="good0"}') == 100 &&
         $(value 'gpu_memory_fragmentation_ratio{pool="gz2"}') != none ]]; do
  ((SECONDS < deadline)) || stack_fail "Prometheus: up=$(value 'up{job="gpulens"}'), good0=$(value 'host_network_receive_bytes_total{device="good0"}'), gz2=$(value 'gpu_memory_fragmentation_ratio{pool="gz2"}')"
  sleep 1
done
check() {  # expr want
  local got
  got=$(value "$1")
  [[ $got == "$2" ]] || stack_fail "$1: $got, want $2"
}
check 'host_network_receive_bytes_total{device="dup"}' 5
check 'count(host_network_receive_bytes_total{device=~"neg|inf|many|named|cut.*|gz.*"})' none
check 'count(host_network_receive_bytes_total{device=~"bad.*"})' none
check 'count({__name__=~".+",pool="bad"})' none
check 'gpu_memory_fragmentation_ratio{pool="shared"}' 0.25
check 'gpu_memory_fragmentation_ratio{pool="b64"}' 0.5
check 'gpu_memory_fragmentation_ratio{pool="gz1"}' 0.1
check 'count(gpu_allocator_retries_total < 0)' none
check 'count(gpu_allocator_retries_total > 1e300)' none
check "gpulens_source_up{target=\"$P/cut\"}" 0
check "gpulens_source_up{target=\"$P/nonl\"}" 1
check 'host_network_receive_bytes_total{device="nonl1"}' 2
check "gpulens_source_up{target=\"$P/gzip\"}" 0
check "gpulens_source_up{target=\"$P/hostile\"}" 1
for reason in label_utf8 label_count label_reserved duplicate invalid_value; do
  got=$(value "gpulens_series_dropped_total{source=\"scrape\",reason=\"$reason\"}")
  [[ $got != none && $got != 0 ]] || stack_fail "gpulens_series_dropped_total{reason=$reason}: $got"
done
got=$(value 'gpulens_series_dropped_total{source="push",reason="label_utf8"}')
[[ $got == 1 ]] || stack_fail "pushes dropped for label_utf8: $got"
grep -q 'scrape_series_dropped' "$STACK/agent-main.log" || stack_fail "no log line for the dropped series"
grep -q 'does not end with a newline' "$STACK/agent-main.log" || stack_fail "the cut page's reason is not logged"
echo "PASS"
