#!/usr/bin/env python3
"""Stand-in for the exporters a GPU node runs, for the scrape source's tests.

Serves, on 127.0.0.1:PORT, expositions written the way each exporter writes
them (names, label sets and order, value formats, HELP/TYPE lines):

  /dcgm     dcgm-exporter 4.x: an A100 node (8 GPUs, DCP profiling fields
            on), text 0.0.4, labels gpu, UUID, pci_bus_id, device,
            modelName, Hostname, DCGM_FI_DRIVER_VERSION, then container,
            namespace, pod on GPUs 0-3; integers "%d", doubles "%f"
  /dcgm-exp the same with the DCGM_EXP_* rows of the CSV enabled (XID,
            clock-event counts in the window, health watches, P2P status)
  /vllm     vLLM (prometheus_client): text 0.0.4, or OpenMetrics 1.0 when
            the Accept header asks for it (as prometheus_client does);
            labels engine, model_name; _created samples
  /triton   Triton (prometheus-cpp text): nv_inference_* with model, version
  /triton-summaries  Triton with --metrics-config summary_latencies=true:
            two models, with the request and queue latency summaries
            (quantile 0.5/0.9/0.95/0.99/0.999, _sum, _count)
  /hang     accepts and never answers
  /500      HTTP 500
  /big      a 50 MB answer (streamed; stops when the client hangs up)
  /garbage  an HTML page

Counters grow with time, so rates are real. Values the tests check:
GPU g: FB_USED 1000*(g+1) MiB, GPU_UTIL 93, SM_OCCUPANCY 0.25, DRAM_ACTIVE
0.5, TENSOR 0.125, energy 1000 mJ per second since start; vLLM running 3+4,
waiting 2; Triton pending 5, 10 successes/s of 20000 us each per model,
request p99 80000 us (densenet_onnx) and 260000 us (bert_onnx).

Usage: exporter_standin.py PORT
"""
import socketserver
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

START = time.time()
UUIDS = [f"GPU-5e8f3c1a-{g:04x}-4a6b-9c3d-0000000000{g:02x}" for g in range(8)]
POD = ("trainer", "ml", "llm-train-0")


def gpu_labels(g, extra=()):
    """dcgm-exporter's label order: the GPU's, then its Labels map in key
    order (the label rows, then a DCGM_EXP_* family's own), then the pod."""
    labels = (f'gpu="{g}",UUID="{UUIDS[g]}",pci_bus_id="00000000:{0x07 + 8 * g:02X}:00.0",'
              f'device="nvidia{g}",modelName="NVIDIA A100-SXM4-80GB",Hostname="gpu-node-1"')
    for k, v in sorted([("DCGM_FI_DRIVER_VERSION", "550.144.03"), *extra]):
        labels += f',{k}="{v}"'
    if g < 4:
        labels += f',container="{POD[0]}",namespace="{POD[1]}",pod="{POD[2]}"'
    return labels


def dcgm(exp=False):
    t = time.time() - START
    out = []

    def fam(name, typ, help_text, fmt, value_of):
        out.append(f"# HELP {name} {help_text}")
        out.append(f"# TYPE {name} {typ}")
        for g in range(8):
            out.append(f"{name}{{{gpu_labels(g)}}} {fmt % value_of(g)}")

    fam("DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz).", "%d", lambda g: 1410)
    fam("DCGM_FI_DEV_MEM_CLOCK", "gauge", "Memory clock frequency (in MHz).", "%d", lambda g: 1593)
    fam("DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C).", "%d", lambda g: 61 + g)
    fam("DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W).", "%f", lambda g: 312.5)
    fam("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter", "Total energy consumption since boot (in mJ).", "%d",
        lambda g: int(5_000_000 + 1000 * t))
    fam("DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %).", "%d", lambda g: 93)
    fam("DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "Memory utilization (in %).", "%d", lambda g: 40)
    fam("DCGM_FI_DEV_XID_ERRORS", "gauge", "Value of the last XID error encountered.", "%d", lambda g: 0)
    fam("DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB).", "%d", lambda g: 81000 - 1000 * (g + 1))
    fam("DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB).", "%d", lambda g: 1000 * (g + 1))
    fam("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "counter", "Total number of PCIe retries.", "%d", lambda g: 0)
    fam("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gauge", "Ratio of time the graphics engine is active.", "%f",
        lambda g: 0.9)
    fam("DCGM_FI_PROF_SM_OCCUPANCY", "gauge", "The ratio of number of warps resident on an SM.", "%f",
        lambda g: 0.25)
    fam("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "gauge", "Ratio of cycles the tensor (HMMA) pipe is active.", "%f",
        lambda g: 0.125)
    fam("DCGM_FI_PROF_DRAM_ACTIVE", "gauge",
        "Ratio of cycles the device memory interface is active sending or receiving data.", "%f", lambda g: 0.5)
    if exp:
        out += dcgm_exp()
    return ("text/plain; version=0.0.4; charset=utf-8", "\n".join(out) + "\n")


HEALTH_WATCHES = ["PCIE", "NVLINK", "PMU", "MCU", "MEM", "SM", "INFOROM", "THERMAL", "POWER", "DRIVER"]


def dcgm_exp():
    """The DCGM_EXP_* families (rows uncommented in the CSV, whose commented
    rows type them counter): XID 31 twice on GPU 2 and clock events on GPU 0
    in the 300000 ms window (one zero-valued series without xid/clock_event
    for a GPU with nothing in it), GPU 3's PCIE health watch at FAIL, every
    P2P link OK."""
    out = []
    win = ("window_size_in_ms", "300000")

    def fam(name, help_text, rows):
        out.append(f"# HELP {name} {help_text}")
        out.append(f"# TYPE {name} counter")
        out.extend(f"{name}{{{gpu_labels(g, extra)}}} {v}" for g, extra, v in rows)

    fam("DCGM_EXP_CLOCK_EVENTS_COUNT", "reported clock events",
        [(0, [("clock_event", "power_cap"), win], 12), (0, [("clock_event", "hw_thermal"), win], 3)] +
        [(g, [win], 0) for g in range(1, 8)])
    fam("DCGM_EXP_XID_ERRORS_COUNT", "reported XIDs during last window",
        [(g, [win, ("xid", "31")], 2) if g == 2 else (g, [win], 0) for g in range(8)])
    fam("DCGM_EXP_GPU_HEALTH_STATUS", "DCGM reported health status",
        [(g, [("health_error_code", "DCGM_FR_PCI_REPLAY_RATE" if g == 3 and w == "PCIE" else "DCGM_FR_OK"),
              ("health_watch", w)], 20 if g == 3 and w == "PCIE" else 0)
         for g in range(8) for w in HEALTH_WATCHES])
    fam("DCGM_EXP_P2P_STATUS", "P2P NvLink status",
        [(g, [("link_status", "OK"), ("peer_gpu", str(j))], 0) for g in range(8) for j in range(8) if j != g])
    return out


VLLM_BUCKETS = ["0.3", "0.5", "0.8", "1.0", "1.5", "2.0", "2.5", "5.0", "10.0", "15.0", "20.0", "30.0", "40.0",
                "50.0", "60.0", "120.0", "240.0", "480.0", "960.0", "1920.0", "7680.0", "+Inf"]


def vllm(openmetrics):
    t = time.time() - START
    n = int(10 * t) + 100  # requests finished so far
    out = []
    lab = 'engine="{e}",model_name="meta-llama/Llama-3.1-8B-Instruct"'
    out += ["# HELP vllm:num_requests_running Number of requests in model execution batches.",
            "# TYPE vllm:num_requests_running gauge",
            f"vllm:num_requests_running{{{lab.format(e=0)}}} 3.0",
            f"vllm:num_requests_running{{{lab.format(e=1)}}} 4.0",
            "# HELP vllm:num_requests_waiting Number of requests waiting to be processed.",
            "# TYPE vllm:num_requests_waiting gauge",
            f"vllm:num_requests_waiting{{{lab.format(e=0)}}} 2.0",
            f"vllm:num_requests_waiting{{{lab.format(e=1)}}} 0.0"]
    name = "vllm:prompt_tokens"
    out += [f"# HELP {name}{'' if openmetrics else '_total'} Number of prefill tokens processed.",
            f"# TYPE {name}{'' if openmetrics else '_total'} counter",
            f"{name}_total{{{lab.format(e=0)}}} {float(n * 512)}",
            f"{name}_created{{{lab.format(e=0)}}} {START}"]
    h = "vllm:e2e_request_latency_seconds"
    out += [f"# HELP {h} Histogram of e2e request latency in seconds.", f"# TYPE {h} histogram"]
    for e in (0, 1):
        # 90 % under 0.8 s, 99 % under 5 s, the rest under 30 s
        cum = {"0.3": 0.5, "0.5": 0.8, "0.8": 0.9, "1.0": 0.93, "1.5": 0.95, "2.0": 0.96, "2.5": 0.97, "5.0": 0.99}
        for le in VLLM_BUCKETS:
            frac = cum.get(le, 1.0 if float(le.replace("+Inf", "inf")) >= 30 else 0.995)
            out.append(f'{h}_bucket{{{lab.format(e=e)},le="{le}"}} {float(int(n * frac))}')
        out.append(f"{h}_count{{{lab.format(e=e)}}} {float(n)}")
        out.append(f"{h}_sum{{{lab.format(e=e)}}} {n * 0.6}")
        out.append(f"{h}_created{{{lab.format(e=e)}}} {START}")
    if openmetrics:
        out.append("# EOF")
        return ("application/openmetrics-text; version=1.0.0; charset=utf-8", "\n".join(out) + "\n")
    return ("text/plain; version=0.0.4; charset=utf-8", "\n".join(out) + "\n")


# Triton's models: name, pending requests, p99 of the request summary (us).
# /triton is Triton's defaults (one model, counters only); /triton-summaries
# runs with --metrics-config summary_latencies=true (two models).
TRITON_MODELS = [("densenet_onnx", 5, 80000.0), ("bert_onnx", 0, 260000.0)]
# summary_quantiles as Triton's doc example sets them: quantile -> fraction of the p99
TRITON_QUANTILES = [("0.5", 0.25), ("0.9", 0.5), ("0.95", 0.75), ("0.99", 1.0), ("0.999", 1.5)]


def triton(summaries):
    t = time.time() - START
    n = int(10 * t) + 50
    models = TRITON_MODELS if summaries else TRITON_MODELS[:1]
    out = []

    def fam(name, typ, help_text, lines):
        out.append(f"# HELP {name} {help_text}")
        out.append(f"# TYPE {name} {typ}")
        out.extend(lines)

    lab = 'model="{m}",version="1"'
    fam("nv_inference_request_success", "counter", "Number of successful inference requests, all batch sizes",
        [f"nv_inference_request_success{{{lab.format(m=m)}}} {n}" for m, _, _ in models])
    fam("nv_inference_request_failure", "counter", "Number of failed inference requests, all batch sizes",
        [f'nv_inference_request_failure{{model="{m}",reason="BACKEND",version="1"}} 0' for m, _, _ in models])
    fam("nv_inference_count", "counter", "Number of inferences performed (does not include cached requests)",
        [f"nv_inference_count{{{lab.format(m=m)}}} {n}" for m, _, _ in models])
    fam("nv_inference_request_duration_us", "counter",
        "Cumulative inference request duration in microseconds (includes cached requests)",
        [f"nv_inference_request_duration_us{{{lab.format(m=m)}}} {n * 20000}" for m, _, _ in models])
    fam("nv_inference_pending_request_count", "gauge",
        "Instantaneous number of pending requests awaiting execution per-model.",
        [f"nv_inference_pending_request_count{{{lab.format(m=m)}}} {p}" for m, p, _ in models])
    if summaries:
        # prometheus-cpp's summary: _count, _sum, then one line per quantile
        # (label last); quantiles over Triton's sliding window, _sum/_count
        # over the process' life.
        for name, help_text, share in [
                ("nv_inference_request_summary_us", "Summary of inference request duration in microseconds "
                 "(includes cached requests)", 1.0),
                ("nv_inference_queue_summary_us", "Summary of inference queuing duration in microseconds "
                 "(includes cached requests)", 0.1)]:
            lines = []
            for m, _, p99 in models:
                lines.append(f"{name}_count{{{lab.format(m=m)}}} {n}")
                lines.append(f"{name}_sum{{{lab.format(m=m)}}} {n * 20000 * share:.0f}")
                for q, f in TRITON_QUANTILES:
                    lines.append(f'{name}{{{lab.format(m=m)},quantile="{q}"}} {p99 * f * share:g}')
            fam(name, "summary", help_text, lines)
    fam("nv_gpu_utilization", "gauge", "GPU utilization rate [0.0 - 1.0)",
        [f'nv_gpu_utilization{{gpu_uuid="{UUIDS[0]}"}} 0.93'])
    return ("text/plain; version=0.0.4; charset=utf-8", "\n".join(out) + "\n")


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def send(self, code, ctype, body):
        data = body.encode()
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        path = self.path.split("?")[0]
        if path == "/dcgm":
            self.send(200, *dcgm())
        elif path == "/dcgm-exp":
            self.send(200, *dcgm(exp=True))
        elif path == "/vllm":
            self.send(200, *vllm("application/openmetrics-text" in self.headers.get("Accept", "")))
        elif path == "/triton":
            self.send(200, *triton(False))
        elif path == "/triton-summaries":
            self.send(200, *triton(True))
        elif path == "/hang":
            time.sleep(3600)
        elif path == "/500":
            self.send(500, "text/plain", "An error has occurred while serving metrics:\n\ncollector failed\n")
        elif path == "/garbage":
            self.send(200, "text/html", "<!DOCTYPE html>\n<html><body><h1>Sign in</h1></body></html>\n")
        elif path == "/big":
            line = ("DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",UUID=\"" + UUIDS[0] + "\"} 93\n").encode()
            total = 50 * 1000 * 1000
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(total // len(line) * len(line)))
            self.end_headers()
            chunk = line * (1_000_000 // len(line))
            try:
                for _ in range(total // len(chunk)):
                    self.wfile.write(chunk)
            except (BrokenPipeError, ConnectionResetError):
                pass
        else:
            self.send(404, "text/plain", "not found\n")


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True


if __name__ == "__main__":
    Server(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
