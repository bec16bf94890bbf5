#!/usr/bin/env python3
"""Writes the gpulens Grafana dashboards from one panel table.

    python3 deploy/grafana/generate.py          # rewrite the JSON files
    python3 deploy/grafana/generate.py --check  # exit 1 if they are stale

gpulens.json reads the agent's native names; gpulens-dcgm.json the same
panels on dcgm-exporter's DCGM_FI_* names (panels with no DCGM equivalent are
left out). A banner across the top turns red while any selected agent serves
simulated data (gpulens_simulated 1). Rows follow the three layers plus
health: fleet, findings, compute, memory, IO, health, serving.
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SEL = 'job=~"$job", instance=~"$instance", gpu=~"$gpu"'
HOST = 'job=~"$job", instance=~"$instance"'

# (row, title, unit, native expr, dcgm expr or None, legend, kind)
# kind: "ts" time series per GPU, "stat" single number, "table" instant table.
PANELS = [
    ("Fleet", "GPUs", "none", f'count(gpu_up{{{HOST}}})', f'count(DCGM_FI_DEV_GPU_TEMP{{{HOST}}})', "", "stat"),
    ("Fleet", "GPUs answering", "none", f'sum(gpu_up{{{HOST}}})', None, "", "stat"),
    ("Fleet", "Mean utilisation", "percentunit", 'avg(instance:gpu_utilization_ratio:avg{job=~"$job", instance=~"$instance"})',
     'avg(instance:gpu_utilization_ratio:avg{job=~"$job", instance=~"$instance"})', "", "stat"),
    ("Fleet", "Mean SM occupancy", "percentunit", 'avg(instance:gpu_sm_occupancy_ratio:avg{job=~"$job", instance=~"$instance"})',
     'avg(instance:gpu_sm_occupancy_ratio:avg{job=~"$job", instance=~"$instance"})', "", "stat"),
    ("Fleet", "Power", "watt", 'sum(instance:gpu_power_watts:sum{job=~"$job", instance=~"$instance"})',
     'sum(instance:gpu_power_watts:sum{job=~"$job", instance=~"$instance"})', "", "stat"),
    ("Fleet", "Utilisation by host", "percentunit", 'instance:gpu_utilization_ratio:avg{job=~"$job", instance=~"$instance"}',
     'instance:gpu_utilization_ratio:avg{job=~"$job", instance=~"$instance"}', "{{instance}}", "ts"),
    ("Findings", "Active findings", "none", f'gpulens_finding{{{SEL}}} == 1', None, "", "table"),
    ("Findings", "GPU time lost by cause", "s", f'sum by (cause) (rate(gpulens_waste_gpu_seconds_total{{{SEL}}}[$__rate_interval]))',
     None, "{{cause}}", "ts"),
    ("Compute", "GPU utilisation (coarse)", "percentunit", f'gpu_utilization_ratio{{{SEL}}}',
     f'DCGM_FI_DEV_GPU_UTIL{{{SEL}}} / 100', "{{instance}} GPU {{gpu}}", "ts"),
    ("Compute", "SM active", "percentunit", f'gpu_sm_active_ratio{{{SEL}}}', f'DCGM_FI_PROF_SM_ACTIVE{{{SEL}}}',
     "{{instance}} GPU {{gpu}}", "ts"),
    ("Compute", "SM occupancy", "percentunit", f'gpu_sm_occupancy_ratio{{{SEL}}}', f'DCGM_FI_PROF_SM_OCCUPANCY{{{SEL}}}',
     "{{instance}} GPU {{gpu}}", "ts"),
    ("Compute", "Tensor core activity", "percentunit", f'gpu_tensor_core_util_ratio{{{SEL}}}',
     f'DCGM_FI_PROF_PIPE_TENSOR_ACTIVE{{{SEL}}}', "{{instance}} GPU {{gpu}}", "ts"),
    ("Compute", "SM clock", "hertz", f'gpu_sm_clock_hertz{{{SEL}}}', f'DCGM_FI_DEV_SM_CLOCK{{{SEL}}} * 1e6',
     "{{instance}} GPU {{gpu}}", "ts"),
    ("Memory", "Framebuffer used", "percentunit", f'gpu_memory_used_bytes{{{SEL}}} / gpu_memory_total_bytes{{{SEL}}}',
     f'DCGM_FI_DEV_FB_USED{{{SEL}}} / DCGM_FI_DEV_FB_TOTAL{{{SEL}}}', "{{instance}} GPU {{gpu}}", "ts"),
    ("Memory", "Memory bandwidth utilisation", "percentunit", f'gpu_mem_bandwidth_util_ratio{{{SEL}}}',
     f'DCGM_FI_PROF_DRAM_ACTIVE{{{SEL}}}', "{{instance}} GPU {{gpu}}", "ts"),
    ("Memory", "Allocator external fragmentation (pushed)", "percentunit",
     f'gpu_allocator_external_fragmentation_ratio{{pool!~"small.*", {SEL}}}', None,
     "{{instance}} GPU {{gpu}} pid {{pid}} {{pool}} pool", "ts"),
    ("Memory", "Allocator slack, 1 - allocated/reserved (pushed)", "percentunit",
     f'gpu_memory_fragmentation_ratio{{{SEL}}}', None, "{{instance}} GPU {{gpu}} pid {{pid}}", "ts"),
    ("Memory", "Allocator retries and OOMs (pushed)", "none",
     f'increase(gpu_allocator_retries_total{{{SEL}}}[5m]) or increase(gpu_allocator_ooms_total{{{SEL}}}[5m])', None,
     "{{instance}} GPU {{gpu}} pid {{pid}}", "ts"),
    ("IO", "PCIe TX / RX of peak", "percentunit",
     f'max by (instance, gpu) ({{__name__=~"gpu_pcie_(tx|rx)_bandwidth_util_ratio", {SEL}}})',
     None, "{{instance}} GPU {{gpu}}", "ts"),
    ("IO", "PCIe throughput", "Bps", f'rate(gpu_pcie_rx_bytes_total{{{SEL}}}[$__rate_interval]) + rate(gpu_pcie_tx_bytes_total{{{SEL}}}[$__rate_interval])',
     f'DCGM_FI_PROF_PCIE_RX_BYTES{{{SEL}}} + DCGM_FI_PROF_PCIE_TX_BYTES{{{SEL}}}', "{{instance}} GPU {{gpu}}", "ts"),
    ("IO", "PCIe link (current / max generation)", "percentunit",
     f'gpu_pcie_link_generation{{{SEL}}} / gpu_pcie_link_generation_max{{{SEL}}}',
     f'DCGM_FI_DEV_PCIE_LINK_GEN{{{SEL}}} / DCGM_FI_DEV_PCIE_MAX_LINK_GEN{{{SEL}}}', "{{instance}} GPU {{gpu}}", "ts"),
    ("IO", "NVLink throughput", "Bps",
     f'sum by (instance, gpu) (rate(gpu_nvlink_tx_bytes_total{{{SEL}}}[$__rate_interval]))',
     f'DCGM_FI_PROF_NVLINK_TX_BYTES{{{SEL}}}', "{{instance}} GPU {{gpu}}", "ts"),
    ("Health", "Temperature", "celsius", f'gpu_temperature_celsius{{{SEL}}}', f'DCGM_FI_DEV_GPU_TEMP{{{SEL}}}',
     "{{instance}} GPU {{gpu}}", "ts"),
    ("Health", "Power", "watt", f'gpu_power_watts{{{SEL}}}', f'DCGM_FI_DEV_POWER_USAGE{{{SEL}}}',
     "{{instance}} GPU {{gpu}}", "ts"),
    ("Health", "Clock-event reasons", "none", f'gpu_clock_event_active{{{SEL}}} == 1',
     f'DCGM_FI_DEV_CLOCK_THROTTLE_REASONS{{{SEL}}}', "{{instance}} GPU {{gpu}} {{reason}}", "ts"),
    ("Health", "XID errors (last 1h)", "none", f'increase(gpu_xid_errors_total{{{SEL}}}[1h])',
     f'DCGM_FI_DEV_XID_ERRORS{{{SEL}}}', "{{instance}} GPU {{gpu}} XID {{xid}}", "ts"),
    ("Health", "GPU answering", "none", f'gpu_up{{{SEL}}}', None, "{{instance}} GPU {{gpu}}", "ts"),
    ("Serving", "Request latency p99", "s",
     f'histogram_quantile(0.99, sum by (instance, le) (rate(serving_request_latency_seconds_bucket{{{HOST}}}[$__rate_interval])))',
     f'histogram_quantile(0.99, sum by (instance, le) (rate(serving_request_latency_seconds_bucket{{{HOST}}}[$__rate_interval])))',
     "{{instance}}", "ts"),
]


def panel(pid, title, unit, expr, legend, kind, x, y):
    w, h = (4, 4) if kind == "stat" else (12, 8)
    p = {
        "id": pid,
        "title": title,
        "type": {"ts": "timeseries", "stat": "stat", "table": "table"}[kind],
        "datasource": {"type": "prometheus", "uid": "${datasource}"},
        "gridPos": {"x": x, "y": y, "w": w, "h": h},
        "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
        "targets": [{"refId": "A", "expr": expr, "legendFormat": legend or "__auto",
                     "instant": kind == "table", "range": kind != "table"}],
    }
    if kind == "table":
        p["transformations"] = [{"id": "labelsToFields", "options": {}},
                                {"id": "organize", "options": {"excludeByName": {"Time": True, "Value": True, "__name__": True}}}]
    return p, w, h


def banner(pid):
    """Full-width warning across the top while any selected agent simulates.

    A stat on max(gpulens_simulated): 1 reads SIMULATED DATA on red; with no
    simulated agent there is no series and the panel says so quietly.
    """
    return {
        "id": pid,
        "title": "",
        "type": "stat",
        "transparent": True,
        "datasource": {"type": "prometheus", "uid": "${datasource}"},
        "gridPos": {"x": 0, "y": 0, "w": 24, "h": 3},
        "fieldConfig": {"defaults": {
            "unit": "none",
            "noValue": "Real GPU data (no agent serves simulated data)",
            "color": {"mode": "thresholds"},
            "thresholds": {"mode": "absolute", "steps": [{"color": "transparent", "value": None},
                                                         {"color": "red", "value": 1}]},
            "mappings": [{"type": "value", "options": {
                "1": {"text": "SIMULATED DATA: an agent runs the simulator (--source sim); these are not real GPUs",
                      "color": "red", "index": 0}}}],
        }, "overrides": []},
        "options": {"colorMode": "background", "graphMode": "none", "textMode": "value", "justifyMode": "center",
                    "reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False}},
        "targets": [{"refId": "A", "expr": 'max(gpulens_simulated{job=~"$job", instance=~"$instance"}) == 1',
                     "legendFormat": "__auto", "instant": True, "range": False}],
    }


def variable(name, label, query):
    return {"name": name, "label": label, "type": "query", "datasource": {"type": "prometheus", "uid": "${datasource}"},
            "query": {"query": query, "refId": name}, "definition": query, "refresh": 2, "includeAll": True,
            "multi": True, "allValue": ".*", "current": {"text": "All", "value": "$__all"}, "sort": 1}


def dashboard(dcgm):
    probe = "DCGM_FI_DEV_GPU_TEMP" if dcgm else "gpu_up"
    panels, pid, y = [banner(1)], 2, 3
    for row in dict.fromkeys(r[0] for r in PANELS):
        panels.append({"id": pid, "type": "row", "title": row, "collapsed": False,
                       "gridPos": {"x": 0, "y": y, "w": 24, "h": 1}, "panels": []})
        pid, y, x, row_h = pid + 1, y + 1, 0, 0
        for (r, title, unit, native, dcgm_expr, legend, kind) in PANELS:
            expr = dcgm_expr if dcgm else native
            if r != row or expr is None:
                continue
            p, w, h = panel(pid, title, unit, expr, legend, kind, x, y)
            if x + w > 24:
                x, y = 0, y + row_h
                p["gridPos"].update(x=0, y=y)
                row_h = 0
            panels.append(p)
            pid, x, row_h = pid + 1, x + w, max(row_h, h)
        y += row_h
    return {
        "uid": "gpulens-dcgm" if dcgm else "gpulens",
        "title": "gpulens: GPUs (dcgm-exporter names)" if dcgm else "gpulens: GPUs",
        "description": "Three-layer GPU view (compute, memory, IO) with health, findings and serving latency, per GPU and per fleet.",
        "tags": ["gpu", "gpulens"] + (["dcgm"] if dcgm else []),
        "schemaVersion": 39,
        "version": 1,
        "editable": True,
        "graphTooltip": 1,
        "time": {"from": "now-1h", "to": "now"},
        "refresh": "30s",
        "templating": {"list": [
            {"name": "datasource", "label": "Data source", "type": "datasource", "query": "prometheus",
             "current": {}, "hide": 0},
            variable("job", "Job", f"label_values({probe}, job)"),
            variable("instance", "Host", f'label_values({probe}{{job=~"$job"}}, instance)'),
            variable("gpu", "GPU", f'label_values({probe}{{job=~"$job", instance=~"$instance"}}, gpu)'),
        ]},
        "annotations": {"list": []},
        "panels": panels,
    }


def main():
    check = "--check" in sys.argv
    stale = False
    for name, dcgm in (("gpulens.json", False), ("gpulens-dcgm.json", True)):
        text = json.dumps(dashboard(dcgm), indent=2, ensure_ascii=False) + "\n"
        path = os.path.join(HERE, "dashboards", name)
        if check:
            with open(path) as f:
                if f.read() != text:
                    print(f"{path} is stale: run python3 deploy/grafana/generate.py", file=sys.stderr)
                    stale = True
        else:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                f.write(text)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
