#!/usr/bin/env bash
# NVIDIA's official dcgm-exporter Grafana dashboard (a verbatim copy in
# tests/data/dcgm-exporter) works unchanged on gpulens: a real Prometheus
# scrapes `gpulens serve --dcgm-names` on the simulator, and every panel
# query and template-variable query of the dashboard returns data. Also
# checks the newer lowercase `hostname` label option end to end.
#
#   dcgm_exporter_dashboard_test.sh GPULENS ROOT
#
# Exits 77 (skipped) without prometheus or curl.
set -euo pipefail
GPULENS=$1
ROOT=$2
here=$(cd "$(dirname "$0")" && pwd)
source "$here/lib/stack.sh"
stack_init prometheus curl

a=$(free_port)
b=$(free_port)
start_agent dcgm "$a" --source sim --scenario healthy-training --interval 1s --dcgm-names
start_agent dcgm-lower "$b" --source sim --scenario thermal-throttle-one-gpu --interval 1s --dcgm-names \
  --dcgm-hostname-label hostname
cat >"$STACK/prometheus.yml" <<YAML
global: {scrape_interval: 1s}
scrape_configs:
  - job_name: dcgm
    static_configs: [{targets: ['127.0.0.1:$a', '127.0.0.1:$b']}]
YAML
port=$(free_port)
start_prometheus "$port" "$STACK/prometheus.yml"
# Two scrapes of each target.
deadline=$((SECONDS + 30))
until prom_query "$port" 'count(DCGM_FI_DEV_GPU_TEMP)' | grep '"16"' >/dev/null; do
  ((SECONDS < deadline)) || stack_fail "Prometheus never saw 16 GPUs' DCGM_FI_DEV_GPU_TEMP"
  sleep 0.5
done

/usr/bin/python3 - "$ROOT/tests/data/dcgm-exporter/dcgm-exporter-dashboard.json" "$port" <<'PY' || stack_fail "dashboard panels without data"
import json, re, sys, urllib.parse, urllib.request
path, port = sys.argv[1], sys.argv[2]
d = json.load(open(path))
subst = {"$instance": ".*", "$gpu": ".*", "$__rate_interval": "30s", "$__interval": "1s"}
def expand(q):
    for k in sorted(subst, key=len, reverse=True):
        q = q.replace(k, subst[k])
    return q
queries = [(p["title"], t["expr"]) for p in d["panels"] for t in p.get("targets", []) if "expr" in t]
for v in d["templating"]["list"]:
    if v["type"] != "query":
        continue
    m = re.fullmatch(r"label_values\((.+), (\w+)\)", v.get("definition", ""))
    assert m, f"variable {v['name']}: unsupported query {v.get('definition')}"
    queries.append((f"variable {v['name']}", f"count by ({m.group(2)}) ({m.group(1)})"))
assert len(queries) >= 10, f"only {len(queries)} queries found in {path}"
failed = 0
for title, q in queries:
    url = f"http://127.0.0.1:{port}/api/v1/query?" + urllib.parse.urlencode({"query": expand(q)})
    ans = json.load(urllib.request.urlopen(url, timeout=10))
    n = len(ans.get("data", {}).get("result", []))
    ok = ans.get("status") == "success" and n > 0
    failed += not ok
    print(f"{'ok  ' if ok else 'FAIL'} {n:3d} series  {title}: {expand(q)}")
print(f"{path.split('/')[-1]}: {len(queries) - failed} of {len(queries)} queries return data")
sys.exit(1 if failed else 0)
PY

# The dashboard's "gpu" variable lists the eight GPUs; the lowercase option
# reaches Prometheus as `hostname`, the default as `Hostname`.
prom_query "$port" "count(DCGM_FI_DEV_GPU_UTIL{instance=\"127.0.0.1:$b\",hostname!=\"\",Hostname=\"\"})" | grep '"8"' >/dev/null \
  || stack_fail "--dcgm-hostname-label hostname: no lowercase hostname label"
prom_query "$port" "count(DCGM_FI_DEV_GPU_UTIL{instance=\"127.0.0.1:$a\",Hostname!=\"\",hostname=\"\"})" | grep '"8"' >/dev/null \
  || stack_fail "default: no Hostname label"
# Every series carries the driver version label row; XID is 0 without an XID.
prom_query "$port" 'count(DCGM_FI_DEV_FB_USED{DCGM_FI_DRIVER_VERSION="simulated"})' | grep '"16"' >/dev/null \
  || stack_fail "DCGM_FI_DRIVER_VERSION missing"
prom_query "$port" 'count(DCGM_FI_DEV_XID_ERRORS == 0)' | grep '"16"' >/dev/null || stack_fail "DCGM_FI_DEV_XID_ERRORS not 0 on every GPU"
echo "dcgm-exporter dashboard: ok"
