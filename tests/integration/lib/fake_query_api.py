#!/usr/bin/env python3
"""A stand-in for a Prometheus query API that answers what a test asks for.

Serves /api/v1/label/__name__/values (always DCGM_FI_DEV_GPU_UTIL), the
instant query /api/v1/query (GET or POST; always one host, n1: how
`diagnose --prometheus` lists a fleet's GPU hosts) and /api/v1/query_range
with the answer named by MODE:
  matrix   a well-formed matrix, two samples
  vector   a vector answer (as /api/v1/query gives) where a matrix was asked
  ts:X     a matrix whose second sample has the timestamp text X (1e300, -5, ...)
Prints the port it bound on loopback, then serves until killed.

  fake_query_api.py MODE
"""
import http.server
import json
import sys

MODE = sys.argv[1]


def matrix(ts2):
    return ('{"status":"success","data":{"resultType":"matrix","result":[{"metric":'
            '{"__name__":"DCGM_FI_DEV_GPU_UTIL","gpu":"0","Hostname":"n1"},'
            '"values":[[1764410400,"50"],[' + ts2 + ',"60"]]}]}}')


class Handler(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.do_GET()

    def do_GET(self):
        if self.path.startswith("/api/v1/query?") or self.path == "/api/v1/query":
            body = ('{"status":"success","data":{"resultType":"vector","result":[{"metric":'
                    '{"Hostname":"n1"},"value":[1764410400,"1"]}]}}')
        elif self.path.startswith("/api/v1/label/__name__/values"):
            body = json.dumps({"status": "success", "data": ["DCGM_FI_DEV_GPU_UTIL"]})
        elif self.path.startswith("/api/v1/query_range"):
            if MODE == "vector":
                body = ('{"status":"success","data":{"resultType":"vector","result":[{"metric":'
                        '{"__name__":"DCGM_FI_DEV_GPU_UTIL","gpu":"0","Hostname":"n1"},'
                        '"value":[1764410400,"50"]}]}}')
            elif MODE.startswith("ts:"):
                body = matrix(MODE[3:])
            else:
                body = matrix("1764410415")
        else:
            self.send_error(404)
            return
        data = body.encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
