#!/usr/bin/env python3
"""A stand-in for the Kubernetes API server's pod list, for the agent's
--kube-owner-labels (docs/jobs.md): https on a free loopback port with the
given certificate; it answers GET /api/v1/pods only with the right bearer
token (else 401) and the fieldSelector spec.nodeName=NODE (else 400), the
way the real one filters; what it answers comes from MODE_FILE, read per
request:
  labels   a PodList: llama-worker-0 owned by a Kubeflow job, a notebook
           without an owner label (and labels that must never be exported)
  absent   the same pods, no owner labels
  403      Forbidden, as without the RBAC
  garbage  200 with bytes that are not JSON
  huge     200 with a PodList above 16 MiB
Each request is one line in LOG_FILE. It writes its port to PORT_FILE.
  kube_api_fake.py PORT_FILE CERT KEY TOKEN NODE MODE_FILE LOG_FILE"""
import json
import os
import ssl
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

port_file, cert, key, token, node, mode_file, log_file = sys.argv[1:8]


def pod(ns, name, labels):
    return {"metadata": {"namespace": ns, "name": name, "uid": name + "-uid", "labels": labels},
            "spec": {"nodeName": node, "containers": [{"name": "c", "env": [{"name": "HF_TOKEN", "value": "hf_leak"}]}]},
            "status": {"phase": "Running"}}


def pod_list(owner):
    owned = {"training.kubeflow.org/job-name": "llama", "team-secret": "s3cr3t-label"} if owner else {"app": "llama"}
    return {"kind": "PodList", "apiVersion": "v1", "metadata": {"resourceVersion": "42"},
            "items": [pod("ml", "llama-worker-0", owned), pod("lab", "notebook", {"app": "jupyter"})]}


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def answer(self, code, body, kind="application/json"):
        self.send_response(code)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        url = urlparse(self.path)
        with open(log_file, "a") as log:
            log.write(f"GET {self.path} auth={'ok' if self.headers.get('Authorization') == 'Bearer ' + token else 'bad'}\n")
        if self.headers.get("Authorization") != "Bearer " + token:
            return self.answer(401, b'{"kind":"Status","code":401,"reason":"Unauthorized"}')
        if url.path != "/api/v1/pods" or parse_qs(url.query).get("fieldSelector") != ["spec.nodeName=" + node]:
            return self.answer(400, b'{"kind":"Status","code":400,"reason":"BadRequest"}')
        mode = open(mode_file).read().strip()
        if mode == "403":
            return self.answer(403, json.dumps({"kind": "Status", "code": 403, "reason": "Forbidden",
                                                "message": 'pods is forbidden: User "system:serviceaccount:gpulens:gpulens" '
                                                           'cannot list resource "pods"'}).encode())
        if mode == "garbage":
            return self.answer(200, b'\x00\xff{"kind":"PodList","items":[{')
        if mode == "huge":
            return self.answer(200, HUGE)
        return self.answer(200, json.dumps(pod_list(mode == "labels")).encode())


# Made once, before the port is announced: the answer then streams at once.
doc = pod_list(True)
doc["items"] += [pod("ml", f"filler-{i}", {"app": "x" * 60}) for i in range(60000)]
HUGE = json.dumps(doc).encode()
assert len(HUGE) > 16 << 20, len(HUGE)

server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(cert, key)
server.socket = ctx.wrap_socket(server.socket, server_side=True)
with open(port_file + ".tmp", "w") as f:
    f.write(str(server.server_address[1]))
os.rename(port_file + ".tmp", port_file)
server.serve_forever()
